# The lock table and the API function: the same resources as the SAM template
# at the repo root, from a built zip. The endpoints are in http_api.tf,
# function_url.tf and private_api.tf; each file holds one feature, with the
# alarms on what it holds.

locals {
  use_http_api     = var.endpoint == "http_api"
  use_function_url = var.endpoint == "function_url"
  # private_api.tf
  use_private_rest_api = var.endpoint == "private_rest_api"
  # Both or neither, or the function's precondition refuses the plan.
  has_domain     = var.domain_name != null && var.certificate_arn != null && local.use_http_api
  has_access_log = local.use_http_api && var.api_access_log
  # Every alarm notifies alarm_topic_arn, or the topic made in notifications.tf.
  alarm_actions = [var.alarm_topic_arn == null ? aws_sns_topic.alarms[0].arn : var.alarm_topic_arn]
  # A function URL ends with "/" already.
  base_url = local.use_private_rest_api ? local.private_base_url : local.use_function_url ? aws_lambda_function_url.this[0].function_url : (
    local.has_domain ? "https://${var.domain_name}/" : "${aws_apigatewayv2_api.this[0].api_endpoint}/"
  )
  # null means none reserved behind the HTTP API (its throttling bounds the
  # load) and 10 behind a function URL, where it is the only brake.
  reserved_concurrency = var.reserved_concurrency != null ? var.reserved_concurrency : (local.use_function_url ? 10 : -1)

  # The typed settings as the binary reads them (maps iterate in key order).
  groups_env  = join(",", [for group, slots in var.groups : "${group}=${slots}"])
  settle_env  = join(",", [for group, time in var.settle : "${group}=${time}"])
  lease_env   = join(",", [for group, time in var.lease : "${group}=${time}"])
  drain_env   = join(",", [for group, gate in var.drain : "${group}=${gate}"])
  return_env  = join(",", [for group, timeout in var.return_gate : "${group}=${timeout}"])
  zones_env   = join(",", var.zones)
  canary_env  = join(",", [for group, canary in var.canary : "${group}=${canary}"])
  windows_env = join(";", flatten([for group, windows in var.maintenance_windows : [for w in windows : "${group}: days=${join(",", w.days)} start_time=${w.start_time} length_minutes=${w.length_minutes}"]]))
  clients_env = join(" ", var.clients)

  # The zip: a local file, or an object in S3.
  code_from_s3     = var.lambda_s3_bucket != null
  source_code_hash = var.lambda_zip_path == null ? null : filebase64sha256(var.lambda_zip_path)

  # One access log line per request, for the HTTP API and the private REST
  # API (which adds the caller's VPC endpoint).
  access_log_fields = {
    requestId        = "$context.requestId"
    ip               = "$context.identity.sourceIp"
    method           = "$context.httpMethod"
    path             = "$context.path"
    status           = "$context.status"
    latencyMs        = "$context.responseLatency"
    integrationError = "$context.integrationErrorMessage"
  }

  # The lock table: made here, or this region's replica of a global table.
  makes_table          = var.existing_table_name == null
  table_name           = local.makes_table ? aws_dynamodb_table.locks[0].name : data.aws_dynamodb_table.existing[0].name
  table_arn            = local.makes_table ? aws_dynamodb_table.locks[0].arn : data.aws_dynamodb_table.existing[0].arn
  table_stream_arn     = local.makes_table ? aws_dynamodb_table.locks[0].stream_arn : data.aws_dynamodb_table.existing[0].stream_arn
  replica_regions      = var.global_table == null ? [] : var.global_table.replica_regions
  witness_regions      = var.global_table == null ? [] : compact([var.global_table.witness_region])
  global_table_regions = concat(local.replica_regions, local.witness_regions)
  # On a global table, made here or elsewhere, each region's functions record
  # their settings under its name and compare them (FLEETLOCK_REGION).
  on_global_table = var.global_table != null || !local.makes_table
  region          = data.aws_region.current.region
  region_env      = local.on_global_table ? local.region : ""
  # MRSC's Region sets: the three regions are one set's.
  mrsc_region_sets = {
    US = ["us-east-1", "us-east-2", "us-west-2"]
    EU = ["eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1"]
    AP = ["ap-northeast-1", "ap-northeast-2", "ap-northeast-3"]
  }
  mrsc_region_set = [for set, regions in local.mrsc_region_sets : set if length(setsubtract(concat([local.region], local.global_table_regions), regions)) == 0 && !contains(local.global_table_regions, local.region)]

  # IAM names are account-wide: a prefix, so that a second region or a second
  # copy of the module never collides (IAM allows 38 characters of prefix).
  iam_prefix = substr(var.name, 0, 24)
}

# One region's table, or the global table's first replica (global_table), or
# none: a replica made by the module in another region (existing_table_name).
resource "aws_dynamodb_table" "locks" {
  count = local.makes_table ? 1 : 0

  name                        = "${var.name}-locks"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "group"
  deletion_protection_enabled = var.table_deletion_protection

  attribute {
    name = "group"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = var.table_kms_key_arn
  }

  # Read by the slot-events function only (slot_events.tf). On a global
  # table every replica's stream carries every region's writes: it is read
  # here, in the region that makes the table, and nowhere else.
  stream_enabled   = var.slot_events
  stream_view_type = var.slot_events ? "NEW_AND_OLD_IMAGES" : null

  # Multi-Region strong consistency: a conditional write is decided against
  # every region's latest version of the item, so the one-write decisions
  # hold across regions. Eventual consistency would check the local replica
  # only and over-grant: this module never makes it.
  dynamic "replica" {
    for_each = local.replica_regions
    content {
      region_name                 = replica.value
      consistency_mode            = "STRONG"
      deletion_protection_enabled = var.table_deletion_protection
      point_in_time_recovery      = true
      propagate_tags              = true
    }
  }

  dynamic "global_table_witness" {
    for_each = local.witness_regions
    content {
      region_name = global_table_witness.value
    }
  }

  tags = var.tags

  lifecycle {
    precondition {
      condition     = var.global_table == null || length(local.mrsc_region_set) == 1
      error_message = "global_table: ${local.region} and ${join(", ", local.global_table_regions)} are not three regions of one MRSC Region set (US: us-east-1, us-east-2, us-west-2; EU: eu-west-1, eu-west-2, eu-west-3, eu-central-1; AP: ap-northeast-1, ap-northeast-2, ap-northeast-3), and a global table in strong consistency spans one set."
    }

    precondition {
      condition     = var.global_table == null || var.table_kms_key_arn == null
      error_message = "table_kms_key_arn is a key of one region, and a global table's replicas in the other regions need keys of their own: leave it null (the AWS managed key) with global_table."
    }
  }

  # checkov:skip=CKV_AWS_119: encrypted with the AWS managed key; a customer managed key adds cost and a key policy for data that is only node ids and timestamps.
}

# Before global tables the table had no count: the same table, kept.
# Terraform infers this move when a count is added; written down so that
# the upgrade does not depend on it (tests/iac/terraform/upgrade.tftest.hcl).
moved {
  from = aws_dynamodb_table.locks
  to   = aws_dynamodb_table.locks[0]
}

# This region's replica of a global table made in another region.
data "aws_dynamodb_table" "existing" {
  count = local.makes_table ? 0 : 1
  name  = var.existing_table_name
}

resource "aws_cloudwatch_log_group" "function" {
  name              = "/aws/lambda/${var.name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.logs_kms_key_arn
  tags              = var.tags

  # checkov:skip=CKV_AWS_158: logs hold node ids and decisions, no secrets; the default encryption applies.
  # checkov:skip=CKV_AWS_338: retention is the operator's choice (log_retention_days), 30 days by default.
}

data "aws_iam_policy_document" "assume_lambda" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "function" {
  name_prefix          = "${local.iam_prefix}-function-"
  path                 = var.role_path
  permissions_boundary = var.permissions_boundary
  assume_role_policy   = data.aws_iam_policy_document.assume_lambda.json
  tags                 = var.tags
}

resource "aws_iam_role_policy_attachment" "function_xray" {
  count      = var.tracing_mode == "Active" ? 1 : 0
  role       = aws_iam_role.function.name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/AWSXRayDaemonWriteAccess"
}

data "aws_iam_policy_document" "function" {
  # `fleetlock iam-policy --for function`: one DescribeTable at start-up (and
  # with '*' or zones one GetItem of the groups '*' made), then one UpdateItem
  # per call; on a global table one GetItem of the regions' records every 30 s.
  statement {
    sid       = "LockTable"
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:UpdateItem"]
    resources = [local.table_arn]
  }

  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.function.arn}:*"]
  }
}

resource "aws_iam_role_policy" "function" {
  name   = "fleetlock-function"
  role   = aws_iam_role.function.id
  policy = data.aws_iam_policy_document.function.json
}

resource "aws_lambda_function" "this" {
  function_name     = var.name
  description       = "FleetLock server (v1/pre-reboot, v1/steady-state)"
  role              = aws_iam_role.function.arn
  filename          = var.lambda_zip_path
  s3_bucket         = var.lambda_s3_bucket
  s3_key            = var.lambda_s3_key
  s3_object_version = var.lambda_s3_object_version
  source_code_hash  = local.source_code_hash
  runtime           = "provided.al2023"
  handler           = "bootstrap"
  architectures     = [var.architecture]
  memory_size       = var.api_memory_size
  timeout           = 10
  tags              = var.tags

  reserved_concurrent_executions = local.reserved_concurrency

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
    }
  }

  tracing_config {
    mode = var.tracing_mode
  }

  lifecycle {
    precondition {
      condition     = length(local.unconfigured_refusals) == 0
      error_message = "The function would refuse these settings at start: ${join("; ", local.unconfigured_refusals)}. The configured groups: ${join(", ", local.configured_groups)}."
    }

    precondition {
      condition     = length(local.zone_refusals) == 0
      error_message = "The function would refuse these settings at start: ${join("; ", local.zone_refusals)}."
    }

    precondition {
      condition     = length(local.credential_typos) == 0
      error_message = "The groups and the credentials disagree by a typo, so those nodes would hear 403 at every try: ${join("; ", local.credential_typos)}."
    }

    precondition {
      condition     = local.time_zone_known
      error_message = "time_zone '${var.time_zone}' is not a time zone of the IANA database the function bundles${length(local.closest_time_zone) > 0 ? " (did you mean '${local.closest_time_zone[0]}'?)" : ""} (UTC, or a name such as Europe/Berlin; time_zones.tf lists them)."
    }

    precondition {
      condition     = var.allow_anonymous || length(var.clients) > 0
      error_message = "clients is required (make entries with `fleetlock credential`), unless allow_anonymous is true."
    }

    precondition {
      condition     = var.domain_name == null || local.use_http_api
      error_message = "domain_name needs endpoint = \"http_api\": a function URL has no custom domain, and a private REST API needs a private custom domain, which this module does not make."
    }

    precondition {
      condition     = !local.use_private_rest_api || length(var.private_vpc_endpoint_ids) > 0 || (var.private_vpc_id != null && length(var.private_subnet_ids) > 0 && length(var.private_security_group_ids) > 0)
      error_message = "endpoint = \"private_rest_api\" needs private_vpc_endpoint_ids, or private_vpc_id, private_subnet_ids and private_security_group_ids to create one."
    }

    precondition {
      condition     = local.use_private_rest_api || (length(var.private_vpc_endpoint_ids) == 0 && var.private_vpc_id == null && length(var.private_subnet_ids) == 0 && length(var.private_security_group_ids) == 0 && length(var.private_source_cidrs) == 0 && !var.private_api_access_log && !var.private_dns_enabled)
      error_message = "the private_* variables are for endpoint = \"private_rest_api\"; set endpoint, or leave them unset."
    }

    precondition {
      condition     = var.global_table == null || var.existing_table_name == null
      error_message = "global_table makes the lock table here and existing_table_name uses one made in another region: give one of them (global_table in the region that makes it, existing_table_name in the others)."
    }

    precondition {
      condition     = (var.domain_name == null) == (var.certificate_arn == null)
      error_message = "domain_name and certificate_arn go together: give both or neither."
    }
  }

  logging_config {
    log_format       = "JSON"
    log_group        = aws_cloudwatch_log_group.function.name
    system_log_level = var.platform_log_level
  }

  depends_on = [aws_iam_role_policy.function, aws_lambda_invocation.config_check]

  # checkov:skip=CKV_AWS_116: invoked synchronously by API Gateway; a dead-letter queue never receives anything.
  # checkov:skip=CKV_AWS_117: talks only to DynamoDB over its public endpoint; a VPC adds NAT cost and nothing else.
  # checkov:skip=CKV_AWS_173: the environment holds a table name, slot counts, a log level and salted hashes of client secrets, no secrets.
  # checkov:skip=CKV_AWS_115: reserved concurrency is var.reserved_concurrency, unset by default: new accounts have too little quota to reserve any; the API's throttling bounds the load.
  # checkov:skip=CKV_AWS_272: code signing needs a signing profile the operator runs; the zip is built from this repository.
  # checkov:skip=CKV_AWS_50: X-Ray tracing is tracing_mode, PassThrough by default (optional cost); every decision is logged with its latency.
}

resource "aws_cloudwatch_metric_alarm" "unservable_requests" {
  alarm_name        = "${var.name}-unservable-requests"
  alarm_description = "Nodes keep asking with a group or credential the deployment never serves (unknown_group, forbidden_group, or a client's name with a wrong secret): asking again cannot mend it, and their updates stop. The function's log names the group and the client: fleetlock config check reads groups against clients; fix the node's group or the credential."
  namespace         = "FleetLock"
  metric_name       = "UnservableRequests"
  dimensions        = { Service = aws_lambda_function.this.function_name }
  statistic         = "Sum"
  period            = 300
  # Zincati asks every 5 minutes: three periods in a row are a node that
  # keeps asking, not one stray call.
  evaluation_periods  = 3
  datapoints_to_alarm = 3
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  # The metric comes with such refusals only: none is no problem.
  treat_missing_data = "notBreaching"
  alarm_actions      = local.alarm_actions
  ok_actions         = local.alarm_actions
  tags               = var.tags
}

resource "aws_cloudwatch_metric_alarm" "oldest_holder" {
  alarm_name          = "${var.name}-oldest-holder"
  alarm_description   = "A node has held its reboot slot for too long: its update probably failed and its group has stopped updating. See who with `fleetlock status`; release by hand with `fleetlock release` once the node is fixed."
  namespace           = "FleetLock"
  metric_name         = "OldestHolderAgeSeconds"
  dimensions          = { Service = aws_lambda_function.this.function_name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = var.oldest_holder_alarm_seconds
  comparison_operator = "GreaterThanThreshold"
  # The metric comes with decisions only: none while windows are closed or
  # nobody asks. Keep the last state instead of reporting a stuck holder OK.
  treat_missing_data = "ignore"
  alarm_actions      = local.alarm_actions
  ok_actions         = local.alarm_actions
  tags               = var.tags
}
