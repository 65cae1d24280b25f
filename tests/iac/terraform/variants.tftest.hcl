# Every variant of the module, planned with a mocked AWS provider
# (tests/iac/plan_terraform.py runs it on a copy for provider 5.100).

mock_provider "aws" {
  source = "./tests/mocks"
}

# The three-regions example's other regions.
mock_provider "aws" {
  alias  = "london"
  source = "./tests/mocks"

  mock_data "aws_region" {
    defaults = { name = "eu-west-2" }
  }
}

mock_provider "aws" {
  alias  = "paris"
  source = "./tests/mocks"

  mock_data "aws_region" {
    defaults = { name = "eu-west-3" }
  }
}

variables {
  lambda_zip_path = "tests/fleetlock.zip"
  clients         = ["fleet:default:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
}

run "defaults_serve_through_an_http_api" {
  command = plan

  assert {
    condition     = length(aws_iam_role_policy.table_key) == 0
    error_message = "no key policy without a table key"
  }
  assert {
    condition     = aws_lambda_function.config_check.handler == "check-config" && jsondecode(aws_lambda_invocation.config_check.input).action == "check-config"
    error_message = "the apply invokes the check function with the check's action"
  }
  assert {
    condition     = length(aws_apigatewayv2_api.this) == 1 && length(aws_lambda_function_url.this) == 0
    error_message = "the default endpoint is an HTTP API"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_GROUPS"] == "default=1"
    error_message = "the function's groups are the default"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_CLIENTS"] == "fleet:default:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"
    error_message = "the function's groups are the default"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_AUTH"] == "required"
    error_message = "clients given: authentication is required"
  }
  assert {
    condition     = length(aws_lambda_function.slot_events) == 0 && length(aws_lambda_function.alarm_pauses) == 0 && length(aws_lambda_function.drained) == 0
    error_message = "no optional function by default"
  }
  assert {
    condition     = length(aws_sns_topic.alarms) == 1
    error_message = "a topic for the alarms is created when none is given"
  }
}

run "the_api_functions_memory_is_a_variable_and_the_others_keep_128" {
  command = plan

  variables {
    api_memory_size = 256
  }

  assert {
    condition     = aws_lambda_function.this.memory_size == 256
    error_message = "api_memory_size sets the API function's memory."
  }

  assert {
    condition     = aws_lambda_function.config_check.memory_size == 128
    error_message = "The deploy's check keeps 128 MB."
  }
}

run "function_url" {
  command = plan

  variables {
    endpoint = "function_url"
  }

  assert {
    condition     = length(aws_lambda_function_url.this) == 1 && length(aws_apigatewayv2_api.this) == 0
    error_message = "a function URL and no API"
  }
  assert {
    condition     = aws_lambda_function.this.reserved_concurrent_executions == 10
    error_message = "a function URL's only brake is reserved concurrency"
  }
}

run "private_rest_api_with_an_endpoint_it_creates" {
  command = apply

  variables {
    endpoint                   = "private_rest_api"
    private_vpc_id             = "vpc-0123456789abcdef0"
    private_subnet_ids         = ["subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb"]
    private_security_group_ids = ["sg-0cccccccccccccccc"]
  }

  override_resource {
    target = aws_vpc_endpoint.private_api
    values = { id = "vpce-0123456789abcdef0" }
  }
  override_resource {
    target = aws_api_gateway_rest_api.private
    values = { id = "a1b2c3d4e5", root_resource_id = "root0000", execution_arn = "arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5" }
  }
  override_data {
    target = data.aws_partition.current
    values = { partition = "aws", dns_suffix = "amazonaws.com" }
  }
  # Applied with the mocked provider, so that the outputs are known; the
  # values the provider checks are given real shapes.
  override_resource {
    target = aws_sns_topic.alarms
    values = { arn = "arn:aws:sns:eu-west-1:123456789012:fleetlock-alarms" }
  }
  override_resource {
    target = aws_iam_role.function
    values = { arn = "arn:aws:iam::123456789012:role/fleetlock-function" }
  }
  override_resource {
    target = aws_iam_role.config_check
    values = { arn = "arn:aws:iam::123456789012:role/fleetlock-config-check" }
  }
  override_resource {
    target = aws_dynamodb_table.locks
    values = { arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/fleetlock-locks" }
  }
  override_resource {
    target = aws_cloudwatch_log_group.function
    values = { arn = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/fleetlock" }
  }
  override_resource {
    target = aws_lambda_function.this
    values = {
      arn        = "arn:aws:lambda:eu-west-1:123456789012:function:fleetlock"
      invoke_arn = "arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:123456789012:function:fleetlock/invocations"
    }
  }

  assert {
    condition     = length(aws_apigatewayv2_api.this) == 0 && length(aws_lambda_function_url.this) == 0
    error_message = "no public endpoint beside the private one"
  }
  assert {
    condition     = aws_vpc_endpoint.private_api[0].service_name == "com.amazonaws.eu-west-1.execute-api" && aws_vpc_endpoint.private_api[0].vpc_endpoint_type == "Interface"
    error_message = "an execute-api interface endpoint is created"
  }
  assert {
    condition     = aws_vpc_endpoint.private_api[0].private_dns_enabled == false
    error_message = "private DNS is off by default"
  }
  assert {
    condition     = jsondecode(aws_vpc_endpoint.private_api[0].policy).Statement[0].Resource == "arn:aws:execute-api:eu-west-1:123456789012:*" && jsondecode(aws_vpc_endpoint.private_api[0].policy).Statement[0].Action == "execute-api:Invoke"
    error_message = "the endpoint created reaches this account's private APIs in the region only"
  }
  assert {
    condition     = aws_api_gateway_rest_api.private[0].endpoint_configuration[0].types == tolist(["PRIVATE"]) && aws_api_gateway_rest_api.private[0].endpoint_configuration[0].vpc_endpoint_ids == toset(["vpce-0123456789abcdef0"])
    error_message = "a PRIVATE REST API associated with the endpoint created"
  }
  assert {
    condition     = length(aws_api_gateway_method.private) == 2 && alltrue([for m in aws_api_gateway_method.private : m.http_method == "ANY"])
    error_message = "ANY / and ANY /{proxy+}"
  }
  assert {
    condition     = aws_api_gateway_resource.private_proxy[0].path_part == "{proxy+}"
    error_message = "the proxy resource catches every path"
  }
  assert {
    condition     = alltrue([for i in aws_api_gateway_integration.private : i.type == "AWS_PROXY" && i.uri == aws_lambda_function.this.invoke_arn])
    error_message = "both routes reach the function"
  }
  assert {
    condition     = aws_api_gateway_method_settings.private[0].settings[0].throttling_rate_limit == 50 && aws_api_gateway_method_settings.private[0].settings[0].throttling_burst_limit == 100
    error_message = "the stage is throttled like the HTTP API"
  }
  assert {
    condition     = length(aws_api_gateway_stage.private[0].access_log_settings) == 0 && length(aws_cloudwatch_log_group.private_api_access) == 0
    error_message = "no access log by default (it needs the account's API Gateway role)"
  }
  assert {
    condition     = output.base_url == "https://a1b2c3d4e5-vpce-0123456789abcdef0.execute-api.eu-west-1.amazonaws.com/fleetlock/"
    error_message = "base_url names the API through the VPC endpoint, with the stage and the trailing /"
  }
  assert {
    condition     = output.private_dns_base_url == "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/fleetlock/"
    error_message = "the base_url for private DNS"
  }
  assert {
    condition     = length(aws_cloudwatch_metric_alarm.private_api_server_errors) == 1 && aws_cloudwatch_metric_alarm.private_api_server_errors[0].dimensions == tomap({ ApiName = "fleetlock", Stage = "fleetlock" })
    error_message = "the REST API's 5XXError is alarmed by API name and stage"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_AUTH"] == "required"
    error_message = "authentication stays on"
  }
  assert {
    condition     = aws_lambda_permission.private_api[0].source_arn == "arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5/*"
    error_message = "only this API may invoke the function"
  }
  assert {
    condition     = [for st in jsondecode(aws_api_gateway_rest_api.private[0].policy).Statement : st.Effect] == ["Deny", "Allow"]
    error_message = "the resource policy denies what does not come through the endpoint, then allows"
  }
  assert {
    condition     = jsondecode(aws_api_gateway_rest_api.private[0].policy).Statement[0].Condition.StringNotEquals["aws:SourceVpce"] == ["vpce-0123456789abcdef0"]
    error_message = "the resource policy admits the endpoint created, and only it"
  }
}

run "private_rest_api_through_existing_endpoints" {
  command = plan

  variables {
    endpoint                 = "private_rest_api"
    private_vpc_endpoint_ids = ["vpce-0aaaaaaaaaaaaaaaa", "vpce-0bbbbbbbbbbbbbbbb"]
    private_source_cidrs     = ["10.0.0.0/16", "10.1.2.0/24"]
    private_api_access_log   = true
    allow_anonymous          = true
    clients                  = []
  }

  assert {
    condition     = length(aws_vpc_endpoint.private_api) == 0
    error_message = "no endpoint is created when ids are given"
  }
  assert {
    condition     = aws_api_gateway_rest_api.private[0].endpoint_configuration[0].vpc_endpoint_ids == toset(["vpce-0aaaaaaaaaaaaaaaa", "vpce-0bbbbbbbbbbbbbbbb"])
    error_message = "the API is associated with the endpoints given"
  }
  assert {
    condition     = length(aws_cloudwatch_log_group.private_api_access) == 1 && length(aws_api_gateway_stage.private[0].access_log_settings) == 1
    error_message = "the access log when asked for"
  }
  assert {
    condition     = tolist(output.private_vpc_endpoint_ids) == tolist(["vpce-0aaaaaaaaaaaaaaaa", "vpce-0bbbbbbbbbbbbbbbb"])
    error_message = "the endpoints admitted are an output"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_AUTH"] == "disabled"
    error_message = "anonymous stays allowed when asked for"
  }
  assert {
    condition     = jsondecode(aws_api_gateway_rest_api.private[0].policy).Statement[1].Condition.NotIpAddress["aws:VpcSourceIp"] == ["10.0.0.0/16", "10.1.2.0/24"]
    error_message = "with source CIDR blocks, a second deny for callers from any other address (the caller's, aws:VpcSourceIp; aws:SourceVpc would be the endpoint's VPC)"
  }
}

run "a_private_api_without_a_network_is_refused" {
  command = plan

  variables {
    endpoint       = "private_rest_api"
    private_vpc_id = "vpc-0123456789abcdef0"
  }

  expect_failures = [aws_lambda_function.this]
}

run "private_settings_without_the_private_endpoint_are_refused" {
  command = plan

  variables {
    private_vpc_endpoint_ids = ["vpce-0aaaaaaaaaaaaaaaa"]
  }

  expect_failures = [aws_lambda_function.this]
}

run "a_private_api_with_a_custom_domain_is_refused" {
  command = plan

  variables {
    endpoint                 = "private_rest_api"
    private_vpc_endpoint_ids = ["vpce-0aaaaaaaaaaaaaaaa"]
    domain_name              = "fleetlock.example.com"
    certificate_arn          = "arn:aws:acm:eu-west-1:123456789012:certificate/00000000-0000-0000-0000-000000000000"
  }

  expect_failures = [aws_lambda_function.this]
}

run "slot_events_only" {
  command = plan

  variables {
    slot_events = true
  }

  assert {
    condition     = length(aws_lambda_function.slot_events) == 1 && length(aws_lambda_function.alarm_pauses) == 0
    error_message = "the slot-events function alone"
  }
  assert {
    condition     = aws_dynamodb_table.locks[0].stream_enabled == true && aws_dynamodb_table.locks[0].stream_view_type == "NEW_AND_OLD_IMAGES"
    error_message = "the table streams both images"
  }
}

run "alarm_pauses_only" {
  command = plan

  variables {
    groups       = { default = 1, workers = 3, db = 1 }
    alarm_pauses = { "api-5xx" = ["*"], "db-latency" = ["workers", "db"] }
  }

  assert {
    condition     = length(aws_lambda_function.alarm_pauses) == 1 && length(aws_lambda_function.slot_events) == 0
    error_message = "the alarm-pauses function alone"
  }
  assert {
    condition     = aws_lambda_function.alarm_pauses[0].environment[0].variables["FLEETLOCK_ALARM_PAUSES"] == "api-5xx=*;db-latency=workers,db"
    error_message = "the alarms reach the function"
  }
  assert {
    condition     = jsondecode(aws_cloudwatch_event_rule.alarm_state_change[0].event_pattern).detail.alarmName == ["api-5xx", "db-latency"]
    error_message = "the rule listens for the gating alarms only"
  }
}

run "everything_on" {
  command = plan

  variables {
    slot_events  = true
    alarm_pauses = { "api-5xx" = ["*"] }
    alarm_email  = "oncall@example.com"
    groups       = { default = 1, workers = 3, "*" = 1 }
    settle       = { default = "10m", "*" = "2m" }
    lease        = { workers = "6h", "*" = "1h30m" }
    drain        = { workers = "15m", "*" = "1h:grant" }
    return_gate  = { workers = "20m" }
    maintenance_windows = {
      workers = [
        { days = ["Sat", "Sun"], start_time = "22:00", length_minutes = 120 },
        { days = ["Wed"], start_time = "03:00", length_minutes = 60 },
        # The function's spelling rules: short or long, any case.
        { days = ["Saturday", "sun"], start_time = "05:00", length_minutes = 30 },
      ]
    }
    permissions_boundary = "arn:aws:iam::123456789012:policy/boundary"
    role_path            = "/fleetlock/"
    tracing_mode         = "Active"
    table_kms_key_arn    = "arn:aws:kms:eu-west-1:123456789012:key/table"
    logs_kms_key_arn     = "arn:aws:kms:eu-west-1:123456789012:key/logs"
    queue_kms_key_arn    = "arn:aws:kms:eu-west-1:123456789012:key/queue"
    topic_kms_key_arn    = "arn:aws:kms:eu-west-1:123456789012:key/topic"
    tags                 = { team = "infra" }
    domain_name          = "fleetlock.example.com"
    certificate_arn      = "arn:aws:acm:eu-west-1:123456789012:certificate/0123"
  }

  assert {
    condition     = length(aws_lambda_function.slot_events) == 1 && length(aws_lambda_function.alarm_pauses) == 1
    error_message = "both optional functions"
  }
  assert {
    condition     = length(aws_sns_topic_subscription.alarm_email) == 1
    error_message = "the email subscribed to the created topic"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_GROUPS"] == "*=1,default=1,workers=3"
    error_message = "the groups joined as the binary reads them"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_SETTLE"] == "*=2m,default=10m"
    error_message = "the settle times joined as the binary reads them"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_LEASE"] == "*=1h30m,workers=6h"
    error_message = "the leases joined as the binary reads them"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_DRAIN"] == "*=1h:grant,workers=15m"
    error_message = "the drain gates joined as the binary reads them"
  }
  assert {
    condition     = length(aws_lambda_function.drained) == 1 && aws_lambda_function.drained[0].handler == "drained" && length(aws_cloudwatch_metric_alarm.drains_overdue) == 1
    error_message = "the drained function and its alarm"
  }
  assert {
    condition     = aws_cloudwatch_event_rule.drain_sweep[0].schedule_expression == "rate(5 minutes)" && jsondecode(aws_cloudwatch_event_target.drain_sweep[0].input).action == "sweep"
    error_message = "the sweep of drains overdue every 5 minutes"
  }
  assert {
    condition     = aws_lambda_function.drained[0].environment[0].variables["FLEETLOCK_DRAIN"] == aws_lambda_function.this.environment[0].variables["FLEETLOCK_DRAIN"] && aws_lambda_function.drained[0].environment[0].variables["FLEETLOCK_GROUPS"] == aws_lambda_function.this.environment[0].variables["FLEETLOCK_GROUPS"]
    error_message = "the sweep reads the gates the API function reads"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_RETURN"] == "workers=20m" && aws_lambda_function.drained[0].environment[0].variables["FLEETLOCK_RETURN"] == "workers=20m" && aws_lambda_function.config_check.environment[0].variables["FLEETLOCK_RETURN"] == "workers=20m"
    error_message = "the return gate joined as the binary reads it, on the API, the drained and the check function"
  }
  assert {
    condition     = length(aws_cloudwatch_metric_alarm.returns_overdue) == 1 && aws_cloudwatch_metric_alarm.returns_overdue[0].metric_name == "ReturnsOverdue"
    error_message = "the alarm on returns overdue"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_WINDOWS"] == "workers: days=Sat,Sun start_time=22:00 length_minutes=120;workers: days=Wed start_time=03:00 length_minutes=60;workers: days=Saturday,sun start_time=05:00 length_minutes=30"
    error_message = "the windows joined in Zincati's words"
  }
  assert {
    condition = alltrue([for role in concat([aws_iam_role.function], aws_iam_role.slot_events, aws_iam_role.alarm_pauses, aws_iam_role.drained) :
    role.permissions_boundary == "arn:aws:iam::123456789012:policy/boundary" && role.path == "/fleetlock/"])
    error_message = "every role has the boundary and the path"
  }
  assert {
    condition     = length(aws_iam_role_policy_attachment.function_xray) == 1 && length(aws_iam_role_policy_attachment.slot_events_xray) == 1 && length(aws_iam_role_policy_attachment.alarm_pauses_xray) == 1
    error_message = "with tracing, every role may write traces"
  }
  assert {
    condition     = aws_lambda_function.this.tracing_config[0].mode == "Active" && aws_lambda_function.slot_events[0].tracing_config[0].mode == "Active"
    error_message = "the functions trace"
  }
  assert {
    condition     = aws_dynamodb_table.locks[0].server_side_encryption[0].kms_key_arn == "arn:aws:kms:eu-west-1:123456789012:key/table"
    error_message = "the table under its key"
  }
  assert {
    condition     = jsonencode(aws_lambda_function.config_check.environment[0].variables) == jsonencode(merge(aws_lambda_function.this.environment[0].variables, { FLEETLOCK_ALARM_PAUSES = "api-5xx=*" }))
    error_message = "the check runs the API function's settings and the alarm pauses'"
  }
  assert {
    condition     = aws_lambda_invocation.config_check.triggers["settings"] == sha256(jsonencode(aws_lambda_function.config_check.environment[0].variables))
    error_message = "a change of any setting checks again"
  }
  assert {
    condition = keys(aws_iam_role_policy.table_key) == ["alarm_pauses", "drained", "function", "slot_events"] && alltrue([
      for policy in aws_iam_role_policy.table_key : jsondecode(policy.policy).Statement[0].Resource == "arn:aws:kms:eu-west-1:123456789012:key/table" &&
      jsondecode(policy.policy).Statement[0].Condition.StringEquals["kms:ViaService"] == "dynamodb.eu-west-1.amazonaws.com" &&
      toset(jsondecode(policy.policy).Statement[0].Action) == toset(["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"])
    ])
    error_message = "every role that touches the table may use its key, through DynamoDB only"
  }
  assert {
    condition     = aws_sqs_queue.slot_events_failures[0].kms_master_key_id == "arn:aws:kms:eu-west-1:123456789012:key/queue" && length(aws_iam_role_policy.slot_events_queue_key) == 1
    error_message = "the queue under its key, which the slot-events role may use"
  }
  assert {
    condition     = aws_sns_topic.alarms[0].kms_master_key_id == "arn:aws:kms:eu-west-1:123456789012:key/topic" && aws_cloudwatch_log_group.function.kms_key_id == "arn:aws:kms:eu-west-1:123456789012:key/logs"
    error_message = "the topic and the logs under theirs"
  }
  assert {
    condition     = aws_lambda_event_source_mapping.slot_events[0].tags["team"] == "infra"
    error_message = "the event source mapping is tagged too"
  }
}

run "custom_domain" {
  command = plan

  variables {
    domain_name     = "fleetlock.example.com"
    certificate_arn = "arn:aws:acm:eu-west-1:123456789012:certificate/0123"
  }

  assert {
    condition     = length(aws_apigatewayv2_domain_name.this) == 1
    error_message = "the custom domain"
  }
  assert {
    condition     = output.base_url == "https://fleetlock.example.com/"
    error_message = "base_url is the custom domain, ending in /"
  }
}

run "an_existing_topic" {
  command = plan

  variables {
    alarm_topic_arn = "arn:aws:sns:eu-west-1:123456789012:oncall"
  }

  assert {
    condition     = length(aws_sns_topic.alarms) == 0
    error_message = "no topic is created when one is given"
  }
  assert {
    condition     = output.alarm_topic_arn == "arn:aws:sns:eu-west-1:123456789012:oncall"
    error_message = "the alarms notify the topic given"
  }
}

run "a_zip_in_s3" {
  command = plan

  variables {
    lambda_zip_path          = null
    lambda_s3_bucket         = "artifacts"
    lambda_s3_key            = "fleetlock/fleetlock-arm64.zip"
    lambda_s3_object_version = "3"
  }

  assert {
    condition     = aws_lambda_function.this.s3_bucket == "artifacts" && aws_lambda_function.this.filename == null
    error_message = "the code comes from S3"
  }
}

run "a_domain_without_its_certificate_is_refused" {
  command = plan

  variables {
    domain_name = "fleetlock.example.com"
  }

  expect_failures = [aws_lambda_function.this]
}

run "two_sources_of_the_zip_are_refused" {
  command = plan

  variables {
    lambda_s3_bucket = "artifacts"
    lambda_s3_key    = "fleetlock.zip"
  }

  # The check's function is the first planned (every serving one waits for it).
  expect_failures = [aws_lambda_function.config_check]
}

run "no_clients_and_not_anonymous_is_refused" {
  command = plan

  variables {
    clients = []
  }

  expect_failures = [aws_lambda_function.this]
}

run "typed_inputs_are_checked" {
  command = plan

  variables {
    groups               = { default = 501, "bad name" = 1 }
    settle               = { default = "ten minutes" }
    lease                = { default = "10m" }
    drain                = { default = "30s:grant" }
    return_gate          = { default = "25h" }
    reserved_concurrency = -2
    log_retention_days   = 10
    api_memory_size      = 100
  }

  expect_failures = [var.groups, var.settle, var.lease, var.drain, var.return_gate, var.reserved_concurrency, var.log_retention_days, var.api_memory_size]
}

run "a_drain_gate_without_slot_events_is_refused" {
  command = plan

  variables {
    drain = { default = "15m" }
  }

  expect_failures = [aws_lambda_function.drained]
}

run "a_return_gate_alone_makes_the_drained_function_and_needs_slot_events" {
  command = plan

  variables {
    slot_events = true
    return_gate = { default = "20m" }
  }

  assert {
    condition     = length(aws_lambda_function.drained) == 1 && length(aws_cloudwatch_metric_alarm.drains_overdue) == 0 && length(aws_cloudwatch_metric_alarm.returns_overdue) == 1 && length(aws_cloudwatch_event_rule.drain_sweep) == 1
    error_message = "the drained function, its sweep and the returns alarm, without the drain alarm"
  }
}

run "a_return_gate_without_slot_events_is_refused" {
  command = plan

  variables {
    return_gate = { default = "20m" }
  }

  expect_failures = [aws_lambda_function.drained]
}

run "a_canary_alone_makes_the_drained_function_and_its_sweep_without_slot_events" {
  command = plan

  variables {
    groups = { workers = 3 }
    canary = { workers = "30m:1+3" }
  }

  assert {
    condition     = length(aws_lambda_function.drained) == 1 && length(aws_cloudwatch_event_rule.drain_sweep) == 1 && length(aws_cloudwatch_metric_alarm.drains_overdue) == 0 && length(aws_cloudwatch_metric_alarm.returns_overdue) == 0
    error_message = "a canary deploys the drained function and its sweep, without the drain and return alarms"
  }

  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_CANARY"] == "workers=30m:1+3" && aws_lambda_function.drained[0].environment[0].variables["FLEETLOCK_CANARY"] == "workers=30m:1+3" && aws_lambda_function.config_check.environment[0].variables["FLEETLOCK_CANARY"] == "workers=30m:1+3"
    error_message = "the canary as the binary reads it, on the API, the drained and the check function"
  }
}

run "a_canary_outside_its_bounds_is_refused" {
  command = plan

  variables {
    groups = { workers = 3 }
    canary = { workers = "30s" }
  }

  expect_failures = [var.canary]
}

run "a_global_table_with_two_replicas" {
  command = plan

  variables {
    global_table = { replica_regions = ["eu-west-2", "eu-west-3"] }
    slot_events  = true
    drain        = { default = "15m" }
  }

  assert {
    condition     = length(aws_dynamodb_table.locks) == 1 && toset([for r in aws_dynamodb_table.locks[0].replica : r.region_name]) == toset(["eu-west-2", "eu-west-3"])
    error_message = "the table is made here with a replica in each other region"
  }
  assert {
    condition     = alltrue([for r in aws_dynamodb_table.locks[0].replica : r.point_in_time_recovery])
    error_message = "every replica keeps point-in-time recovery, as the table does"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_REGION"] == "eu-west-1" && aws_lambda_function.config_check.environment[0].variables["FLEETLOCK_REGION"] == "eu-west-1"
    error_message = "the API and the deploy's check know their region, so settings are recorded and compared"
  }
  assert {
    condition     = length(aws_lambda_function.slot_events) == 1 && length(aws_lambda_event_source_mapping.slot_events) == 1
    error_message = "slot events are read where the table is made"
  }
  assert {
    condition     = jsonencode(output.global_table_regions) == jsonencode(["eu-west-1", "eu-west-2", "eu-west-3"])
    error_message = "the output names the three regions, this one first"
  }
}

run "a_global_table_with_a_witness" {
  command = plan

  variables {
    global_table = { replica_regions = ["eu-central-1"], witness_region = "eu-west-2" }
  }

  assert {
    condition     = [for r in aws_dynamodb_table.locks[0].replica : r.region_name] == ["eu-central-1"]
    error_message = "one replica; the witness holds no table to serve"
  }
  assert {
    condition     = jsonencode(output.global_table_regions) == jsonencode(["eu-west-1", "eu-central-1", "eu-west-2"])
    error_message = "this region, the replica, then the witness"
  }
}

run "one_region_records_no_region" {
  command = plan

  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_REGION"] == "" && length(aws_dynamodb_table.locks[0].replica) == 0 && length(output.global_table_regions) == 0
    error_message = "one region: no replica, and no settings compared"
  }
}

run "a_replica_region_serves_from_the_existing_table" {
  command = plan

  variables {
    existing_table_name = "fleetlock-locks"
    drain               = { default = "15m" }
    alarm_pauses        = { "api-5xx" = ["*"] }
  }

  override_data {
    target = data.aws_dynamodb_table.existing[0]
    values = {
      name       = "fleetlock-locks"
      arn        = "arn:aws:dynamodb:eu-west-1:123456789012:table/fleetlock-locks"
      stream_arn = ""
    }
  }

  assert {
    condition     = length(aws_dynamodb_table.locks) == 0
    error_message = "no table is made in a replica region"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_TABLE"] == "fleetlock-locks" && aws_lambda_function.drained[0].environment[0].variables["FLEETLOCK_TABLE"] == "fleetlock-locks"
    error_message = "every function uses this region's replica"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_REGION"] == "eu-west-1" && aws_lambda_function.alarm_pauses[0].environment[0].variables["FLEETLOCK_REGION"] == "eu-west-1"
    error_message = "the API records its settings, and the alarm pauses their names, under this region"
  }
  assert {
    condition     = length(aws_lambda_function.drained) == 1 && length(aws_lambda_function.slot_events) == 0
    error_message = "the drain gate works here without slot events of its own (they come from the table's region)"
  }
  assert {
    condition     = output.table_name == "fleetlock-locks" && jsonencode(output.global_table_regions) == jsonencode(["eu-west-1"])
    error_message = "the outputs name the replica"
  }
}

run "slot_events_in_a_replica_region_are_refused" {
  command = plan

  variables {
    existing_table_name = "fleetlock-locks"
    slot_events         = true
  }

  override_data {
    target = data.aws_dynamodb_table.existing[0]
    values = { name = "fleetlock-locks", arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/fleetlock-locks" }
  }

  expect_failures = [aws_lambda_function.slot_events]
}

run "a_global_table_across_region_sets_is_refused" {
  command = plan

  variables {
    global_table = { replica_regions = ["us-east-1", "eu-west-2"] }
  }

  expect_failures = [aws_dynamodb_table.locks]
}

run "a_global_table_that_names_this_region_is_refused" {
  command = plan

  variables {
    global_table = { replica_regions = ["eu-west-1", "eu-west-2"] }
  }

  expect_failures = [aws_dynamodb_table.locks]
}

run "a_global_table_of_two_regions_is_refused" {
  command = plan

  variables {
    global_table = { replica_regions = ["eu-west-2"] }
  }

  expect_failures = [var.global_table]
}

run "a_global_table_and_an_existing_table_are_refused_together" {
  command = plan

  variables {
    global_table        = { replica_regions = ["eu-west-2", "eu-west-3"] }
    existing_table_name = "fleetlock-locks"
  }

  override_data {
    target = data.aws_dynamodb_table.existing[0]
    values = { name = "fleetlock-locks", arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/fleetlock-locks" }
  }

  expect_failures = [aws_lambda_function.this]
}

run "a_global_table_with_a_table_key_is_refused" {
  command = plan

  variables {
    global_table      = { replica_regions = ["eu-west-2", "eu-west-3"] }
    table_kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/0123"
  }

  expect_failures = [aws_dynamodb_table.locks]
}

run "example_basic" {
  command = plan

  module {
    source = "./examples/basic"
  }

  variables {
    clients = ["fleet:default,workers:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
  }
}

run "example_function_url" {
  command = plan

  module {
    source = "./examples/function-url"
  }

  variables {
    clients = ["fleet:default:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
  }
}

run "example_complete" {
  command = plan

  module {
    source = "./examples/complete"
  }

  variables {
    clients         = ["fleet:default,workers,db:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    alarm_topic_arn = "arn:aws:sns:eu-west-1:123456789012:oncall"
    domain_name     = "fleetlock.example.com"
    certificate_arn = "arn:aws:acm:eu-west-1:123456789012:certificate/0123"
  }

  assert {
    condition     = output.base_url == "https://fleetlock.example.com/"
    error_message = "base_url is the custom domain"
  }
}

run "example_private" {
  command = plan

  module {
    source = "./examples/private"
  }

  variables {
    vpc_id     = "vpc-0123456789abcdef0"
    subnet_ids = ["subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb"]
    clients    = ["fleet:default:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
  }

  override_data {
    target = data.aws_vpc.nodes
    values = { cidr_block = "10.0.0.0/16" }
  }

  assert {
    condition     = length(module.fleetlock.private_vpc_endpoint_ids) == 1
    error_message = "the example creates one endpoint for the API"
  }
}

run "example_three_regions" {
  command = plan

  module {
    source = "./examples/three-regions"
  }

  variables {
    clients = ["fleet:default,workers,db:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
  }

  assert {
    condition     = length(module.ireland.global_table_regions) == 3 && length(module.london.global_table_regions) == 1 && length(module.paris.global_table_regions) == 1
    error_message = "one table over three regions, made once"
  }
  assert {
    condition     = length(keys(output.base_urls)) == 3
    error_message = "a base_url per region"
  }
}
