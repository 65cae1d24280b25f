output "base_url" {
  description = "Zincati's [updates.fleet_lock] base_url (it ends with /)."
  value       = local.base_url
}

output "zincati_config" {
  description = "Drop this into /etc/zincati/config.d/55-updates-strategy.toml on each node."
  value       = <<-EOT
    [updates]
    strategy = "fleet_lock"

    [updates.fleet_lock]
    # With client credentials (fleetlock credential): https://NAME:SECRET@host/
    base_url = "${local.base_url}"
  EOT
}

output "table_name" {
  description = "The lock table; set FLEETLOCK_TABLE to it for `fleetlock status` and `fleetlock release`."
  value       = aws_dynamodb_table.locks.name
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
  description = "Managed policy for the people on call (fleetlock status, release, pause, resume); attach it to their role."
  value       = aws_iam_policy.operator.arn
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

output "alarm_pauses_function_name" {
  description = "The function that pauses groups while their alarms are in ALARM (null unless alarm_pauses)."
  value       = one(aws_lambda_function.alarm_pauses[*].function_name)
}

output "dashboard_url" {
  description = "The CloudWatch dashboard of this deployment."
  value       = "https://${data.aws_region.current.region}.console.aws.amazon.com/cloudwatch/home?region=${data.aws_region.current.region}#dashboards/dashboard/${aws_cloudwatch_dashboard.this.dashboard_name}"
}
