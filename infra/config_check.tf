# A deploy that would break refuses itself (the SAM template's ConfigCheck):
# the new code and settings run in a function that takes no traffic, invoked
# by the apply before any function that serves is created or updated. A
# refusal (a setting the functions would refuse at start, a table they could
# not use, an alarm that does not exist) fails the apply there, and the
# functions that serve keep their previous configuration.

resource "aws_cloudwatch_log_group" "config_check" {
  name              = "/aws/lambda/${var.name}-config-check"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.logs_kms_key_arn
  tags              = var.tags

  # checkov:skip=CKV_AWS_158: logs hold group names and what the check found, no secrets; the default encryption applies.
  # checkov:skip=CKV_AWS_338: retention is the operator's choice (log_retention_days), 30 days by default.
}

resource "aws_iam_role" "config_check" {
  name_prefix          = "${local.iam_prefix}-config-check-"
  path                 = var.role_path
  permissions_boundary = var.permissions_boundary
  assume_role_policy   = data.aws_iam_policy_document.assume_lambda.json
  tags                 = var.tags
}

# `fleetlock iam-policy --for check-config`: it reads, never writes.
data "aws_iam_policy_document" "config_check" {
  statement {
    sid       = "LockTable"
    actions   = ["dynamodb:DescribeTable"]
    resources = [local.table_arn]
  }

  statement {
    sid       = "Alarms"
    actions   = ["cloudwatch:DescribeAlarms"]
    resources = ["arn:${data.aws_partition.current.partition}:cloudwatch:${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:alarm:*"]
  }

  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.config_check.arn}:*"]
  }
}

resource "aws_iam_role_policy" "config_check" {
  name   = "fleetlock-config-check"
  role   = aws_iam_role.config_check.id
  policy = data.aws_iam_policy_document.config_check.json
}

resource "aws_lambda_function" "config_check" {
  function_name     = "${var.name}-config-check"
  description       = "FleetLock's deploy check of its settings (takes no traffic)"
  role              = aws_iam_role.config_check.arn
  filename          = var.lambda_zip_path
  s3_bucket         = var.lambda_s3_bucket
  s3_key            = var.lambda_s3_key
  s3_object_version = var.lambda_s3_object_version
  source_code_hash  = local.source_code_hash
  runtime           = "provided.al2023"
  handler           = "check-config"
  architectures     = [var.architecture]
  memory_size       = 128
  timeout           = 30
  tags              = var.tags

  # The API function's settings, and the alarm pauses' (tests/iac keeps them equal).
  environment {
    variables = {
      FLEETLOCK_TABLE               = local.table_name
      FLEETLOCK_REGION              = local.region_env
      FLEETLOCK_GROUPS              = local.groups_env
      FLEETLOCK_SETTLE              = local.settle_env
      FLEETLOCK_LEASE               = local.lease_env
      FLEETLOCK_DRAIN               = local.drain_env
      FLEETLOCK_RETURN              = local.return_env
      FLEETLOCK_ZONES               = local.zones_env
      FLEETLOCK_CANARY              = local.canary_env
      FLEETLOCK_MAX_WILDCARD_GROUPS = tostring(var.max_wildcard_groups)
      FLEETLOCK_WINDOWS             = local.windows_env
      FLEETLOCK_TIME_ZONE           = var.time_zone
      RUST_LOG                      = var.log_level
      FLEETLOCK_CLIENTS             = local.clients_env
      FLEETLOCK_AUTH                = var.allow_anonymous ? "disabled" : "required"
      FLEETLOCK_ALARM_PAUSES        = local.alarm_pauses_env
    }
  }

  logging_config {
    log_format       = "JSON"
    log_group        = aws_cloudwatch_log_group.config_check.name
    system_log_level = var.platform_log_level
  }

  # The first function planned, and every other one waits for it: the zip's
  # sources are checked here, once for all (the API function's
  # preconditions check the settings).
  lifecycle {
    precondition {
      condition     = (var.lambda_zip_path != null) != (var.lambda_s3_bucket != null && var.lambda_s3_key != null) && (var.lambda_s3_bucket == null) == (var.lambda_s3_key == null)
      error_message = "give the zip either as lambda_zip_path or as lambda_s3_bucket with lambda_s3_key, not both."
    }
  }

  depends_on = [aws_iam_role_policy.config_check]

  # checkov:skip=CKV_AWS_116: invoked synchronously by the apply; a dead-letter queue never receives anything.
  # checkov:skip=CKV_AWS_117: talks only to DynamoDB and CloudWatch over their public endpoints; a VPC adds NAT cost and nothing else.
  # checkov:skip=CKV_AWS_173: the same environment as the API function's, no secrets.
  # checkov:skip=CKV_AWS_115: invoked once per apply that changes the code or the settings.
  # checkov:skip=CKV_AWS_272: code signing needs a signing profile the operator runs; the zip is built from this repository.
  # checkov:skip=CKV_AWS_50: one invocation per apply; its log says what it found.
}

# The check, again whenever the code or a setting changes (triggers), after
# the function above has them and before any function that serves does
# (their depends_on). A function error fails the apply with its message.
resource "aws_lambda_invocation" "config_check" {
  function_name = aws_lambda_function.config_check.function_name
  input         = jsonencode({ action = "check-config" })

  triggers = {
    settings = sha256(jsonencode(aws_lambda_function.config_check.environment[0].variables))
    # The zip as the functions see it: its hash, or its S3 object (a new
    # object version updates them, and checks again).
    code = local.source_code_hash != null ? local.source_code_hash : jsonencode([var.lambda_s3_bucket, var.lambda_s3_key, var.lambda_s3_object_version])
  }
}
