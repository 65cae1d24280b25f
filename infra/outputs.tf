output "base_url" {
  description = "Zincati's [updates.fleet_lock] base_url (it ends with /). With endpoint = \"private_rest_api\": the host name of the API through the (first) VPC endpoint, which needs no private DNS."
  value       = local.base_url
}

output "private_dns_base_url" {
  description = "With endpoint = \"private_rest_api\": base_url for nodes whose VPC endpoint has private DNS on (private_dns_enabled, or an endpoint of yours with it on); null otherwise."
  value       = local.private_dns_base_url
}

output "private_rest_api_id" {
  description = "The private REST API (null unless endpoint = \"private_rest_api\")."
  value       = one(aws_api_gateway_rest_api.private[*].id)
}

output "private_vpc_endpoint_ids" {
  description = "The execute-api VPC endpoints the private REST API admits (created here, or given); empty unless endpoint = \"private_rest_api\"."
  value       = local.use_private_rest_api ? local.private_vpc_endpoint_ids : []
}

output "zincati_config_command" {
  description = "The command that prints the nodes' Zincati drop-in with a new credential in its base_url (a drop-in without one would get a 401 for every call); add the entry it prints to clients. Fill in NAME and GROUPS."
  value       = "fleetlock credential --name NAME --groups GROUPS --url ${local.base_url}"
}

output "table_name" {
  description = "The lock table; set FLEETLOCK_TABLE to it for `fleetlock status` and `fleetlock release`. With global_table: the other regions' existing_table_name."
  value       = local.table_name
}

output "global_table_regions" {
  description = "With global_table: the lock table's regions, this one first, then the replicas and the witness; with existing_table_name: this region; empty for one region."
  value       = local.makes_table ? (var.global_table == null ? [] : concat([local.region], local.global_table_regions)) : [local.region]
}

output "function_name" {
  description = "The Lambda function."
  value       = aws_lambda_function.this.function_name
}

output "custom_domain_target" {
  description = "Point a CNAME (or alias) record of domain_name at this; null without a custom domain."
  value       = local.has_domain ? aws_apigatewayv2_domain_name.this[0].domain_name_configuration[0].target_domain_name : null
}

output "operator_policy_arn" {
  description = "Managed policy for the people on call (fleetlock status, release, forget, pause, resume); attach it to their role."
  value       = aws_iam_policy.operator.arn
}

output "kube_agent_policy_arn" {
  description = "Managed policy for fleetlock-kube-agent (docs/kubernetes.md); attach it to the role its pods take."
  value       = aws_iam_policy.kube_agent.arn
}

output "slot_events_function_name" {
  description = "The function that turns the lock table's stream into EventBridge events (null unless slot_events)."
  value       = one(aws_lambda_function.slot_events[*].function_name)
}

output "slot_events_failure_queue_url" {
  description = "Descriptions of stream batches whose events could not be put (null unless slot_events)."
  value       = one(aws_sqs_queue.slot_events_failures[*].url)
}

output "alarm_topic_arn" {
  description = "The SNS topic every alarm notifies (created unless alarm_topic_arn was given)."
  value       = local.alarm_actions[0]
}

output "drained_function_arn" {
  description = "The function hooks invoke to confirm a drain ({\"action\": \"drained\", ...}) or a return ({\"action\": \"returned\", ...}); `fleetlock iam-policy --for drain-hook --function-arn ARN` prints a hook's policy (null unless drain or return_gate)."
  value       = one(aws_lambda_function.drained[*].arn)
}

output "alarm_pauses_function_name" {
  description = "The function that pauses groups while their alarms are in ALARM (null unless alarm_pauses)."
  value       = one(aws_lambda_function.alarm_pauses[*].function_name)
}

output "dashboard_url" {
  description = "The CloudWatch dashboard of this deployment."
  value       = "https://${data.aws_region.current.region}.console.aws.amazon.com/cloudwatch/home?region=${data.aws_region.current.region}#dashboards/dashboard/${aws_cloudwatch_dashboard.this.dashboard_name}"
}

output "table_arn" {
  description = "The lock table's ARN (for the operator's and other policies)."
  value       = local.table_arn
}

output "table_stream_arn" {
  description = "The lock table's stream (null unless slot_events)."
  value       = var.slot_events ? local.table_stream_arn : null
}

output "function_arn" {
  description = "The function serving Zincati."
  value       = aws_lambda_function.this.arn
}

output "slot_events_function_arn" {
  description = "The slot-events function (null unless slot_events)."
  value       = one(aws_lambda_function.slot_events[*].arn)
}

output "alarm_pauses_function_arn" {
  description = "The alarm-pauses function (null unless alarm_pauses)."
  value       = one(aws_lambda_function.alarm_pauses[*].arn)
}

output "function_role_name" {
  description = "The role of the function serving Zincati."
  value       = aws_iam_role.function.name
}

output "function_role_arn" {
  description = "The role of the function serving Zincati."
  value       = aws_iam_role.function.arn
}

output "slot_events_role_arn" {
  description = "The role of the slot-events function (null unless slot_events)."
  value       = one(aws_iam_role.slot_events[*].arn)
}

output "alarm_pauses_role_arn" {
  description = "The role of the alarm-pauses function (null unless alarm_pauses)."
  value       = one(aws_iam_role.alarm_pauses[*].arn)
}

output "api_id" {
  description = "The HTTP API (null unless endpoint = \"http_api\")."
  value       = one(aws_apigatewayv2_api.this[*].id)
}

output "api_execution_arn" {
  description = "The HTTP API's execution ARN, for policies on it (null with endpoint = \"function_url\")."
  value       = one(aws_apigatewayv2_api.this[*].execution_arn)
}

output "function_log_group_name" {
  description = "The log group of the function serving Zincati: its decision and refusal lines."
  value       = aws_cloudwatch_log_group.function.name
}

output "slot_events_log_group_name" {
  description = "The slot-events function's log group (null unless slot_events)."
  value       = one(aws_cloudwatch_log_group.slot_events[*].name)
}

output "alarm_pauses_log_group_name" {
  description = "The alarm-pauses function's log group (null unless alarm_pauses)."
  value       = one(aws_cloudwatch_log_group.alarm_pauses[*].name)
}

output "api_access_log_group_name" {
  description = "The HTTP API's access log (null without one)."
  value       = one(aws_cloudwatch_log_group.api_access[*].name)
}

output "slot_events_failure_queue_arn" {
  description = "The slot events' on-failure queue (null unless slot_events)."
  value       = one(aws_sqs_queue.slot_events_failures[*].arn)
}

output "custom_domain_hosted_zone_id" {
  description = "With custom_domain_target, the alias target of a Route 53 record for domain_name (null without a custom domain)."
  value       = local.has_domain ? aws_apigatewayv2_domain_name.this[0].domain_name_configuration[0].hosted_zone_id : null
}
