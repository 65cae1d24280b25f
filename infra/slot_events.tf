# Slot events (var.slot_events): the same binary as a second function, handler
# "slot-events", reads the lock table's stream and puts one EventBridge event
# per grant, release, pause and resume. The same resources as the SAM
# template's SlotEvents* resources.

locals {
  slot_events   = var.slot_events ? 1 : 0
  event_bus_arn = "arn:${data.aws_partition.current.partition}:events:${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:event-bus/${var.event_bus_name}"
}

data "aws_partition" "current" {}
data "aws_region" "current" {}
data "aws_caller_identity" "current" {}

resource "aws_cloudwatch_log_group" "slot_events" {
  count             = local.slot_events
  name              = "/aws/lambda/${var.name}-slot-events"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.logs_kms_key_arn
  tags              = var.tags

  # checkov:skip=CKV_AWS_158: logs hold node ids and event counts, no secrets; the default encryption applies.
  # checkov:skip=CKV_AWS_338: retention is the operator's choice (log_retention_days), 30 days by default.
}

resource "aws_iam_role" "slot_events" {
  count                = local.slot_events
  name_prefix          = "${local.iam_prefix}-slot-events-"
  path                 = var.role_path
  permissions_boundary = var.permissions_boundary
  assume_role_policy   = data.aws_iam_policy_document.assume_lambda.json
  tags                 = var.tags
}

resource "aws_iam_role_policy_attachment" "slot_events_xray" {
  count      = var.slot_events && var.tracing_mode == "Active" ? 1 : 0
  role       = aws_iam_role.slot_events[0].name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/AWSXRayDaemonWriteAccess"
}

# With a customer managed key on the on-failure queue, Lambda sends to it with
# this role: the key too.
resource "aws_iam_role_policy" "slot_events_queue_key" {
  count = var.slot_events && var.queue_kms_key_arn != null ? 1 : 0
  name  = "fleetlock-slot-events-queue-key"
  role  = aws_iam_role.slot_events[0].id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid      = "SlotEventsFailuresKey"
      Effect   = "Allow"
      Action   = ["kms:Decrypt", "kms:GenerateDataKey"]
      Resource = var.queue_kms_key_arn
    }]
  })
}

# `fleetlock iam-policy --for slot-events`: this table's stream, one bus, one
# queue. Not AWSLambdaDynamoDBExecutionRole, which reads every stream ("*").
data "aws_iam_policy_document" "slot_events" {
  # Only with the feature on: the queue and the log group it names exist
  # only then.
  count = local.slot_events

  statement {
    sid = "LockTableStream"
    actions = [
      "dynamodb:DescribeStream",
      "dynamodb:GetRecords",
      "dynamodb:GetShardIterator",
      "dynamodb:ListStreams",
    ]
    resources = ["${local.table_arn}/stream/*"]
  }

  statement {
    sid       = "SlotEventsBus"
    actions   = ["events:PutEvents"]
    resources = [local.event_bus_arn]
  }

  statement {
    sid       = "SlotEventsFailures"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.slot_events_failures[0].arn]
  }

  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.slot_events[0].arn}:*"]
  }
}

resource "aws_iam_role_policy" "slot_events" {
  count  = local.slot_events
  name   = "fleetlock-slot-events"
  role   = aws_iam_role.slot_events[0].id
  policy = data.aws_iam_policy_document.slot_events[0].json
}

resource "aws_lambda_function" "slot_events" {
  count             = local.slot_events
  function_name     = "${var.name}-slot-events"
  description       = "FleetLock slot events (the lock table's stream to EventBridge)"
  role              = aws_iam_role.slot_events[0].arn
  filename          = var.lambda_zip_path
  s3_bucket         = var.lambda_s3_bucket
  s3_key            = var.lambda_s3_key
  s3_object_version = var.lambda_s3_object_version
  source_code_hash  = local.source_code_hash
  runtime           = "provided.al2023"
  handler           = "slot-events"
  architectures     = [var.architecture]
  memory_size       = 128
  # A batch of 100 records is at most a few hundred events, in PutEvents
  # calls of 10, each tried 3 times: well under a minute.
  timeout = 60
  tags    = var.tags

  environment {
    variables = {
      FLEETLOCK_EVENT_BUS = var.event_bus_name
      RUST_LOG            = var.log_level
    }
  }

  logging_config {
    log_format       = "JSON"
    log_group        = aws_cloudwatch_log_group.slot_events[0].name
    system_log_level = var.platform_log_level
  }

  tracing_config {
    mode = var.tracing_mode
  }

  lifecycle {
    precondition {
      condition     = local.makes_table
      error_message = "slot_events runs where the global table is made (the module with global_table): every replica's stream carries every region's writes, so a second slot-events function would send each change twice. Set slot_events = false here; the drain and return gates here still work."
    }
  }

  depends_on = [aws_iam_role_policy.slot_events, aws_lambda_invocation.config_check]

  # checkov:skip=CKV_AWS_116: invoked by an event source mapping, whose on-failure destination receives what fails; a function DLQ only serves asynchronous invocations.
  # checkov:skip=CKV_AWS_117: talks only to EventBridge over its public endpoint; a VPC adds NAT cost and nothing else.
  # checkov:skip=CKV_AWS_173: the environment holds a bus name and a log level, no secrets.
  # checkov:skip=CKV_AWS_115: one shard is read by one invocation at a time; there is no flood to cap.
  # checkov:skip=CKV_AWS_272: code signing needs a signing profile the operator runs; the zip is built from this repository.
  # checkov:skip=CKV_AWS_50: X-Ray tracing is tracing_mode, PassThrough by default (optional cost); every batch is logged with its counts.
}

# What Lambda could not deliver after its retries: a description of the
# failed batch (shard, first and last sequence numbers), kept 14 days.
resource "aws_sqs_queue" "slot_events_failures" {
  count                     = local.slot_events
  name                      = "${var.name}-slot-events-failures"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = var.queue_kms_key_arn == null ? true : null
  kms_master_key_id         = var.queue_kms_key_arn
  tags                      = var.tags

  # checkov:skip=CKV_AWS_27: encrypted at rest by SQS's own keys (sqs_managed_sse_enabled); the check knows KMS keys only. Messages hold a shard id and sequence numbers.
}

resource "aws_lambda_event_source_mapping" "slot_events" {
  count            = local.slot_events
  event_source_arn = local.table_stream_arn
  function_name    = aws_lambda_function.slot_events[0].arn
  # From the oldest record kept: the stream and the mapping are created
  # together, so nothing written in between is missed.
  starting_position              = "TRIM_HORIZON"
  batch_size                     = 100
  parallelization_factor         = 1
  function_response_types        = ["ReportBatchItemFailures"]
  bisect_batch_on_function_error = true
  maximum_retry_attempts         = 10
  maximum_record_age_in_seconds  = -1

  destination_config {
    on_failure {
      destination_arn = aws_sqs_queue.slot_events_failures[0].arn
    }
  }

  tags = var.tags
}

resource "aws_cloudwatch_metric_alarm" "slot_events_failed" {
  count               = local.slot_events
  alarm_name          = "${var.name}-slot-events-failed"
  alarm_description   = "Slot events were not delivered: Lambda gave up on a batch of the lock table's stream and described it in the on-failure queue. The events of those records were not put; read the message for the shard and sequence numbers."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = aws_sqs_queue.slot_events_failures[0].name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "slot_events_iterator_age" {
  count               = local.slot_events
  alarm_name          = "${var.name}-slot-events-behind"
  alarm_description   = "Slot events are behind the lock table. Stream records live 24 hours; events not put by then are lost."
  namespace           = "AWS/Lambda"
  metric_name         = "IteratorAge"
  dimensions          = { FunctionName = aws_lambda_function.slot_events[0].function_name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = var.slot_events_iterator_age_seconds * 1000
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "unreadable_records" {
  count               = local.slot_events
  alarm_name          = "${var.name}-unreadable-stream-records"
  alarm_description   = "A stream record of the lock table could not be read and its events were skipped; the function's log names the record and why."
  namespace           = "FleetLock"
  metric_name         = "UnreadableStreamRecords"
  dimensions          = { Service = aws_lambda_function.slot_events[0].function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "slot_events_errors" {
  count               = local.slot_events
  alarm_name          = "${var.name}-slot-events-errors"
  alarm_description   = "The slot-events function fails (crashes or times out): Lambda retries the batch, and the stream falls behind. See its log."
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = aws_lambda_function.slot_events[0].function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}
