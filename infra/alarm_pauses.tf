# Alarm pauses (var.alarm_pauses): the same binary as a third function, handler
# "alarm-pauses", keeps the table's alarm pauses in step with the gating
# alarms (the SAM template's AlarmPauses* resources), and the alarm on it.

locals {
  alarm_pauses     = length(var.alarm_pauses) == 0 ? 0 : 1
  alarm_pauses_env = join(";", [for alarm, groups in var.alarm_pauses : "${alarm}=${join(",", groups)}"])
}

resource "aws_cloudwatch_log_group" "alarm_pauses" {
  count             = local.alarm_pauses
  name              = "/aws/lambda/${var.name}-alarm-pauses"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.logs_kms_key_arn
  tags              = var.tags

  # checkov:skip=CKV_AWS_158: logs hold group and alarm names, no secrets; the default encryption applies.
  # checkov:skip=CKV_AWS_338: retention is the operator's choice (log_retention_days), 30 days by default.
}

resource "aws_iam_role" "alarm_pauses" {
  count                = local.alarm_pauses
  name_prefix          = "${local.iam_prefix}-alarm-pauses-"
  path                 = var.role_path
  permissions_boundary = var.permissions_boundary
  assume_role_policy   = data.aws_iam_policy_document.assume_lambda.json
  tags                 = var.tags
}

resource "aws_iam_role_policy_attachment" "alarm_pauses_xray" {
  count      = local.alarm_pauses == 1 && var.tracing_mode == "Active" ? 1 : 0
  role       = aws_iam_role.alarm_pauses[0].name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/AWSXRayDaemonWriteAccess"
}

# `fleetlock iam-policy --for alarm-pauses`.
data "aws_iam_policy_document" "alarm_pauses" {
  # Only with the feature on: the log group it names exists only then.
  count = local.alarm_pauses

  statement {
    sid       = "LockTable"
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:Scan", "dynamodb:UpdateItem"]
    resources = [local.table_arn]
  }

  statement {
    sid       = "AlarmStates"
    actions   = ["cloudwatch:DescribeAlarms"]
    resources = ["arn:${data.aws_partition.current.partition}:cloudwatch:${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:alarm:*"]
  }

  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.alarm_pauses[0].arn}:*"]
  }
}

resource "aws_iam_role_policy" "alarm_pauses" {
  count  = local.alarm_pauses
  name   = "fleetlock-alarm-pauses"
  role   = aws_iam_role.alarm_pauses[0].id
  policy = data.aws_iam_policy_document.alarm_pauses[0].json
}

resource "aws_lambda_function" "alarm_pauses" {
  count             = local.alarm_pauses
  function_name     = "${var.name}-alarm-pauses"
  description       = "FleetLock alarm pauses (CloudWatch alarms pause groups)"
  role              = aws_iam_role.alarm_pauses[0].arn
  filename          = var.lambda_zip_path
  s3_bucket         = var.lambda_s3_bucket
  s3_key            = var.lambda_s3_key
  s3_object_version = var.lambda_s3_object_version
  source_code_hash  = local.source_code_hash
  runtime           = "provided.al2023"
  handler           = "alarm-pauses"
  architectures     = [var.architecture]
  memory_size       = 128
  # DescribeAlarms, a read per configured group, a Scan and a write per
  # change, each bounded at 5 s.
  timeout = 30
  tags    = var.tags

  environment {
    variables = {
      FLEETLOCK_TABLE        = local.table_name
      FLEETLOCK_REGION       = local.region_env
      FLEETLOCK_GROUPS       = local.groups_env
      FLEETLOCK_ALARM_PAUSES = local.alarm_pauses_env
      RUST_LOG               = var.log_level
    }
  }

  logging_config {
    log_format       = "JSON"
    log_group        = aws_cloudwatch_log_group.alarm_pauses[0].name
    system_log_level = var.platform_log_level
  }

  tracing_config {
    mode = var.tracing_mode
  }

  depends_on = [aws_iam_role_policy.alarm_pauses, aws_lambda_invocation.config_check]

  # checkov:skip=CKV_AWS_116: a failed event is not lost: the schedule reads every gating alarm's state every 5 minutes and repairs the pauses.
  # checkov:skip=CKV_AWS_117: talks only to DynamoDB and CloudWatch over their public endpoints; a VPC adds NAT cost and nothing else.
  # checkov:skip=CKV_AWS_173: the environment holds a table name, slot counts, alarm names and a log level, no secrets.
  # checkov:skip=CKV_AWS_115: invoked by two rules only; at most a few invocations a minute.
  # checkov:skip=CKV_AWS_272: code signing needs a signing profile the operator runs; the zip is built from this repository.
  # checkov:skip=CKV_AWS_50: X-Ray tracing is tracing_mode, PassThrough by default (optional cost); every change is logged.
}

# The state changes of the gating alarms only (the SAM template, which cannot
# take the names out of its string parameter, takes every alarm's; the
# function ignores one that gates nothing without any AWS call).
resource "aws_cloudwatch_event_rule" "alarm_state_change" {
  count       = local.alarm_pauses
  name        = "${var.name}-alarm-state-change"
  description = "FleetLock alarm pauses: CloudWatch alarm state changes"
  event_pattern = jsonencode({
    source        = ["aws.cloudwatch"]
    "detail-type" = ["CloudWatch Alarm State Change"]
    detail        = { alarmName = keys(var.alarm_pauses) }
  })
  tags = var.tags
}

resource "aws_cloudwatch_event_rule" "alarm_reconcile" {
  count               = local.alarm_pauses
  name                = "${var.name}-alarm-reconcile"
  description         = "FleetLock alarm pauses, reconciled with the alarms' states"
  schedule_expression = "rate(5 minutes)"
  tags                = var.tags
}

resource "aws_cloudwatch_event_target" "alarm_state_change" {
  count = local.alarm_pauses
  rule  = aws_cloudwatch_event_rule.alarm_state_change[0].name
  arn   = aws_lambda_function.alarm_pauses[0].arn
}

resource "aws_cloudwatch_event_target" "alarm_reconcile" {
  count = local.alarm_pauses
  rule  = aws_cloudwatch_event_rule.alarm_reconcile[0].name
  arn   = aws_lambda_function.alarm_pauses[0].arn
}

resource "aws_lambda_permission" "alarm_state_change" {
  count         = local.alarm_pauses
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.alarm_pauses[0].function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.alarm_state_change[0].arn
}

resource "aws_lambda_permission" "alarm_reconcile" {
  count         = local.alarm_pauses
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.alarm_pauses[0].function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.alarm_reconcile[0].arn
}

resource "aws_cloudwatch_metric_alarm" "alarm_pauses_errors" {
  count               = local.alarm_pauses
  alarm_name          = "${var.name}-alarm-pauses-errors"
  alarm_description   = "The alarm-pauses function failed twice in a row (it could not read the alarms or write a pause): groups may not be paused while a gating alarm is in ALARM. See its log."
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = aws_lambda_function.alarm_pauses[0].function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 2
  datapoints_to_alarm = 2
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}
