# The private endpoint (endpoint = "private_rest_api"): a REST API of type
# PRIVATE, associated with the execute-api VPC endpoints (so that the
# {api-id}-{vpce-id} host name exists: Zincati can send neither a Host nor an
# x-apigw-api-id header), and a resource policy that admits calls through
# those endpoints only. The same resources as the SAM template's Private*.

locals {
  create_private_vpc_endpoint = local.use_private_rest_api && length(var.private_vpc_endpoint_ids) == 0
  private_vpc_endpoint_ids    = local.create_private_vpc_endpoint ? [aws_vpc_endpoint.private_api[0].id] : var.private_vpc_endpoint_ids
  has_private_api_access_log  = local.use_private_rest_api && var.private_api_access_log
  # The stage is part of the URL: base_url ends with /fleetlock/.
  private_stage = "fleetlock"
  # Through the (first) VPC endpoint, which needs no private DNS.
  private_host         = "execute-api.${data.aws_region.current.region}.${data.aws_partition.current.dns_suffix}"
  private_base_url     = local.use_private_rest_api ? "https://${aws_api_gateway_rest_api.private[0].id}-${local.private_vpc_endpoint_ids[0]}.${local.private_host}/${local.private_stage}/" : null
  private_dns_base_url = local.use_private_rest_api ? "https://${aws_api_gateway_rest_api.private[0].id}.${local.private_host}/${local.private_stage}/" : null
}

resource "aws_vpc_endpoint" "private_api" {
  count               = local.create_private_vpc_endpoint ? 1 : 0
  vpc_endpoint_type   = "Interface"
  service_name        = "com.amazonaws.${data.aws_region.current.region}.execute-api"
  vpc_id              = var.private_vpc_id
  subnet_ids          = var.private_subnet_ids
  security_group_ids  = var.private_security_group_ids
  private_dns_enabled = var.private_dns_enabled
  tags                = var.tags

  # Only this account's private APIs in this region through it, so hosts in
  # the VPC cannot reach another account's private API through the endpoint
  # made for the nodes; the same policy as the SAM template's.
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "ThisAccountsPrivateApisOnly"
      Effect    = "Allow"
      Principal = "*"
      Action    = "execute-api:Invoke"
      Resource  = "arn:${data.aws_partition.current.partition}:execute-api:${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:*"
    }]
  })
}

# Calls through the VPC endpoints only (and from the source CIDR blocks, if
# given: aws:SourceVpc would name the endpoint's own VPC, not the caller's).
locals {
  private_api_policy = jsonencode({
    Version = "2012-10-17"
    Statement = concat(
      [{
        Sid       = "OnlyThroughTheVpcEndpoints"
        Effect    = "Deny"
        Principal = "*"
        Action    = "execute-api:Invoke"
        Resource  = "execute-api:/*"
        Condition = { StringNotEquals = { "aws:SourceVpce" = local.private_vpc_endpoint_ids } }
      }],
      length(var.private_source_cidrs) == 0 ? [] : [{
        Sid       = "OnlyFromTheSourceCidrs"
        Effect    = "Deny"
        Principal = "*"
        Action    = "execute-api:Invoke"
        Resource  = "execute-api:/*"
        Condition = { NotIpAddress = { "aws:VpcSourceIp" = var.private_source_cidrs } }
      }],
      [{
        Sid       = "Zincati"
        Effect    = "Allow"
        Principal = "*"
        Action    = "execute-api:Invoke"
        Resource  = "execute-api:/*"
      }],
    )
  })
}

resource "aws_api_gateway_rest_api" "private" {
  count       = local.use_private_rest_api ? 1 : 0
  name        = var.name
  description = "FleetLock endpoint for Zincati, reachable only through its VPC endpoints"
  policy      = local.private_api_policy
  tags        = var.tags

  endpoint_configuration {
    types            = ["PRIVATE"]
    vpc_endpoint_ids = local.private_vpc_endpoint_ids
  }

  # A replacement is a new id, so a new base_url: the old API keeps serving
  # until the new one exists.
  lifecycle {
    create_before_destroy = true
  }
}

# ANY / and ANY /{proxy+}: every path and method reaches the function and
# gets its {kind, value} answer, as with the HTTP API's $default route.
resource "aws_api_gateway_resource" "private_proxy" {
  count       = local.use_private_rest_api ? 1 : 0
  rest_api_id = aws_api_gateway_rest_api.private[0].id
  parent_id   = aws_api_gateway_rest_api.private[0].root_resource_id
  path_part   = "{proxy+}"
}

resource "aws_api_gateway_method" "private" {
  for_each      = local.use_private_rest_api ? { root = "root", proxy = "proxy" } : {}
  rest_api_id   = aws_api_gateway_rest_api.private[0].id
  resource_id   = each.key == "root" ? aws_api_gateway_rest_api.private[0].root_resource_id : aws_api_gateway_resource.private_proxy[0].id
  http_method   = "ANY"
  authorization = "NONE"

  # checkov:skip=CKV_AWS_59: Zincati cannot send API Gateway credentials; the resource policy admits the VPC endpoints only and the function checks HTTP Basic credentials.
  # checkov:skip=CKV2_AWS_53: the function validates every request (body, id, group) and answers {kind, value}; a request validator would answer in another shape.
}

resource "aws_api_gateway_integration" "private" {
  for_each                = aws_api_gateway_method.private
  rest_api_id             = aws_api_gateway_rest_api.private[0].id
  resource_id             = each.value.resource_id
  http_method             = each.value.http_method
  type                    = "AWS_PROXY"
  integration_http_method = "POST"
  uri                     = aws_lambda_function.this.invoke_arn
}

resource "aws_api_gateway_deployment" "private" {
  count       = local.use_private_rest_api ? 1 : 0
  rest_api_id = aws_api_gateway_rest_api.private[0].id

  # A new deployment whenever the routes or the policy change.
  triggers = {
    redeploy = sha1(jsonencode([
      aws_api_gateway_resource.private_proxy[0].id,
      [for m in aws_api_gateway_method.private : m.id],
      [for i in aws_api_gateway_integration.private : i.id],
      aws_api_gateway_rest_api.private[0].policy,
    ]))
  }

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_cloudwatch_log_group" "private_api_access" {
  count             = local.has_private_api_access_log ? 1 : 0
  name              = "/aws/apigateway/${var.name}-private-access"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.logs_kms_key_arn
  tags              = var.tags

  # checkov:skip=CKV_AWS_158: access logs hold request metadata only; the default encryption applies.
  # checkov:skip=CKV_AWS_338: retention is the operator's choice (log_retention_days), 30 days by default.
}

resource "aws_api_gateway_stage" "private" {
  count         = local.use_private_rest_api ? 1 : 0
  rest_api_id   = aws_api_gateway_rest_api.private[0].id
  deployment_id = aws_api_gateway_deployment.private[0].id
  stage_name    = local.private_stage
  tags          = var.tags

  dynamic "access_log_settings" {
    for_each = local.has_private_api_access_log ? [1] : []
    content {
      destination_arn = aws_cloudwatch_log_group.private_api_access[0].arn
      format          = jsonencode(merge(local.access_log_fields, { vpce = "$context.identity.vpceId" }))
    }
  }

  # checkov:skip=CKV_AWS_76: the access log is var.private_api_access_log, off by default: it needs the account's API Gateway CloudWatch role, which this module must not replace. The function logs every request's decision.
  # checkov:skip=CKV_AWS_73: X-Ray tracing is the function's tracing_mode; the stage adds nothing a decision log lacks.
  # checkov:skip=CKV_AWS_120: every call is a decision on the lock; an answer must never come from a cache.
  # checkov:skip=CKV2_AWS_51: Zincati cannot present a client certificate; the VPC endpoints and HTTP Basic credentials admit callers.
  # checkov:skip=CKV2_AWS_29: a private API is reachable only through its VPC endpoints; a WAF in front of it adds cost and nothing the resource policy lacks.
  # checkov:skip=CKV2_AWS_4: execution logging also needs the account's API Gateway CloudWatch role; the function logs every request's decision.
}

resource "aws_api_gateway_method_settings" "private" {
  count       = local.use_private_rest_api ? 1 : 0
  rest_api_id = aws_api_gateway_rest_api.private[0].id
  stage_name  = aws_api_gateway_stage.private[0].stage_name
  method_path = "*/*"

  settings {
    throttling_rate_limit  = var.throttling_rate_limit
    throttling_burst_limit = var.throttling_burst_limit
  }

  # checkov:skip=CKV_AWS_225: every call is a decision on the lock; an answer must never come from a cache.
  # checkov:skip=CKV_AWS_308: no cache, so nothing to encrypt.
  # checkov:skip=CKV2_AWS_4: execution logging also needs the account's API Gateway CloudWatch role; the function logs every request's decision.
}

resource "aws_lambda_permission" "private_api" {
  count         = local.use_private_rest_api ? 1 : 0
  statement_id  = "AllowPrivateRestApi"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.this.function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_api_gateway_rest_api.private[0].execution_arn}/*"
}

resource "aws_cloudwatch_metric_alarm" "private_api_server_errors" {
  count               = local.use_private_rest_api ? 1 : 0
  alarm_name          = "${var.name}-private-api-server-errors"
  alarm_description   = "The FleetLock private REST API answers 5xx: DynamoDB is failing or the function is. A full group is a 423 and never counts here."
  namespace           = "AWS/ApiGateway"
  metric_name         = "5XXError"
  dimensions          = { ApiName = aws_api_gateway_rest_api.private[0].name, Stage = local.private_stage }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = var.server_error_alarm_threshold
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}
