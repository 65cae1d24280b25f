# Drain and return gates and canaries (var.drain, var.return_gate,
# var.canary): the same binary as a fourth function, handler "drained",
# which hooks invoke to confirm a drain or a return and a schedule invokes to
# count the drains and returns overdue of groups nobody calls (and stop a
# group whose return, or whose canary's wave, is overdue), and the
# alarms on drains and returns nobody confirmed (the SAM template's Drained*
# and ReturnsOverdueAlarm resources).

locals {
  drain        = length(var.drain) == 0 ? 0 : 1
  return_gated = length(var.return_gate) == 0 ? 0 : 1
  # The drained function serves both gates.
  # Deployed wherever a canary is set too: its sweep stops a group whose
  # wave's node is not back in time.
  drained = local.drain == 1 || local.return_gated == 1 || length(var.canary) > 0 ? 1 : 0
}

resource "aws_cloudwatch_log_group" "drained" {
  count             = local.drained
  name              = "/aws/lambda/${var.name}-drained"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.logs_kms_key_arn
  tags              = var.tags

  # checkov:skip=CKV_AWS_158: logs hold group names and node ids, no secrets; the default encryption applies.
  # checkov:skip=CKV_AWS_338: retention is the operator's choice (log_retention_days), 30 days by default.
}

resource "aws_iam_role" "drained" {
  count                = local.drained
  name_prefix          = "${local.iam_prefix}-drained-"
  path                 = var.role_path
  permissions_boundary = var.permissions_boundary
  assume_role_policy   = data.aws_iam_policy_document.assume_lambda.json
  tags                 = var.tags
}

resource "aws_iam_role_policy_attachment" "drained_xray" {
  count      = local.drained == 1 && var.tracing_mode == "Active" ? 1 : 0
  role       = aws_iam_role.drained[0].name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/AWSXRayDaemonWriteAccess"
}

# `fleetlock iam-policy --for drained`.
data "aws_iam_policy_document" "drained" {
  count = local.drained

  statement {
    sid       = "FleetLockTable"
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:Scan", "dynamodb:UpdateItem"]
    resources = [local.table_arn]
  }

  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.drained[0].arn}:*"]
  }
}

resource "aws_iam_role_policy" "drained" {
  count  = local.drained
  name   = "fleetlock-drained"
  role   = aws_iam_role.drained[0].id
  policy = data.aws_iam_policy_document.drained[0].json
}

resource "aws_lambda_function" "drained" {
  count             = local.drained
  function_name     = "${var.name}-drained"
  description       = "FleetLock drain and return confirmations (invoked by hooks) and the sweep of drains and returns overdue"
  role              = aws_iam_role.drained[0].arn
  filename          = var.lambda_zip_path
  s3_bucket         = var.lambda_s3_bucket
  s3_key            = var.lambda_s3_key
  s3_object_version = var.lambda_s3_object_version
  source_code_hash  = local.source_code_hash
  runtime           = "provided.al2023"
  handler           = "drained"
  architectures     = [var.architecture]
  memory_size       = 128
  # One request (a sweep: one scan, paged over at most the bounded
  # groups), each bounded at 5 s by the SDK.
  timeout = 10
  tags    = var.tags

  environment {
    variables = {
      FLEETLOCK_TABLE = local.table_name
      # The gates, as the API function reads them, for the sweep; and the
      # API function, whose DrainsOverdue and ReturnsOverdue metrics the
      # sweep feeds.
      FLEETLOCK_GROUPS          = local.groups_env
      FLEETLOCK_DRAIN           = local.drain_env
      FLEETLOCK_RETURN          = local.return_env
      FLEETLOCK_CANARY          = local.canary_env
      FLEETLOCK_METRICS_SERVICE = aws_lambda_function.this.function_name
      RUST_LOG                  = var.log_level
    }
  }

  logging_config {
    log_format       = "JSON"
    log_group        = aws_cloudwatch_log_group.drained[0].name
    system_log_level = var.platform_log_level
  }

  tracing_config {
    mode = var.tracing_mode
  }

  lifecycle {
    # The module supports Terraform 1.5, whose variable validations cannot
    # read another variable: the gate checks its events here, at plan time.
    # On a replica of a global table the events come from the region that
    # made the table (its stream carries every region's writes).
    precondition {
      # A canary alone needs no events: its sweep reads the table.
      condition     = var.slot_events || !local.makes_table || (local.drain == 0 && local.return_gated == 0)
      error_message = "drain and return_gate need slot_events = true: the Slot Drain Requested event is what tells a hook to drain a node, and the Slot Released event (returning) what tells it to bring one back; without them every reservation and return waits out its timeout."
    }
  }

  depends_on = [aws_iam_role_policy.drained, aws_lambda_invocation.config_check]

  # checkov:skip=CKV_AWS_116: invoked synchronously by the hooks, which see each failure and retry, and by a schedule whose next sweep repeats a failed one; a dead-letter queue would keep nothing of use.
  # checkov:skip=CKV_AWS_117: talks only to DynamoDB over its public endpoint; a VPC adds NAT cost and nothing else.
  # checkov:skip=CKV_AWS_173: the environment holds a table name, slot counts, drain and return timeouts, a function name and a log level, no secrets.
  # checkov:skip=CKV_AWS_115: invoked by hooks, once per drained or returned node, and by its schedule every 5 minutes.
  # checkov:skip=CKV_AWS_272: code signing needs a signing profile the operator runs; the zip is built from this repository.
  # checkov:skip=CKV_AWS_50: X-Ray tracing is tracing_mode, PassThrough by default (optional cost); every confirmation is logged.
}

# A group's calls count its drains overdue; a group nobody calls (its
# reserved node never asked again) is counted by this sweep.
resource "aws_cloudwatch_event_rule" "drain_sweep" {
  count               = local.drained
  name                = "${var.name}-drain-sweep"
  description         = "FleetLock drain and return gates, those past their timeout counted, overdue returns stop their group"
  schedule_expression = "rate(5 minutes)"
  tags                = var.tags
}

resource "aws_cloudwatch_event_target" "drain_sweep" {
  count = local.drained
  rule  = aws_cloudwatch_event_rule.drain_sweep[0].name
  arn   = aws_lambda_function.drained[0].arn
  input = jsonencode({ action = "sweep" })
}

resource "aws_lambda_permission" "drain_sweep" {
  count         = local.drained
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.drained[0].function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.drain_sweep[0].arn
}

resource "aws_cloudwatch_metric_alarm" "drains_overdue" {
  count               = local.drain
  alarm_name          = "${var.name}-drains-overdue"
  alarm_description   = "A node waited for its drain past the group's drain timeout and nobody confirmed it: the hook is stuck or missing. The node keeps its reserved slot and does not reboot (with hold). See who with `fleetlock status`; confirm with `fleetlock drained` or free the slot with `fleetlock release`."
  namespace           = "FleetLock"
  metric_name         = "DrainsOverdue"
  dimensions          = { Service = aws_lambda_function.this.function_name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  # As the oldest holder's: the metric comes with the group's decisions
  # only; keep the last state through gaps.
  treat_missing_data = "ignore"
  alarm_actions      = local.alarm_actions
  ok_actions         = local.alarm_actions
  tags               = var.tags
}

resource "aws_cloudwatch_metric_alarm" "returns_overdue" {
  count               = local.return_gated
  alarm_name          = "${var.name}-returns-overdue"
  alarm_description   = "A node gave its slot back and nobody confirmed its return to service within the group's return timeout: it is not healthy, or the hook is stuck. The drained function's sweep stops the group's rollout (a pause by the server). See who with `fleetlock status`; once the node is back, `fleetlock returned`, then `fleetlock resume`."
  namespace           = "FleetLock"
  metric_name         = "ReturnsOverdue"
  dimensions          = { Service = aws_lambda_function.this.function_name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  # The sweep sends it every 5 minutes; keep the last state through gaps.
  treat_missing_data = "ignore"
  alarm_actions      = local.alarm_actions
  ok_actions         = local.alarm_actions
  tags               = var.tags
}
