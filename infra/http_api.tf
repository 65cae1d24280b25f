# Endpoint "http_api" (the default): the HTTP API, its access log, its alarm,
# and the optional custom domain (HTTP API only).

resource "aws_cloudwatch_log_group" "api_access" {
  count             = local.has_access_log ? 1 : 0
  name              = "/aws/apigateway/${var.name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.logs_kms_key_arn
  tags              = var.tags

  # checkov:skip=CKV_AWS_158: access logs hold request metadata only; the default encryption applies.
  # checkov:skip=CKV_AWS_338: retention is the operator's choice (log_retention_days), 30 days by default.
}

# The HTTP API endpoint.
resource "aws_apigatewayv2_api" "this" {
  count         = local.use_http_api ? 1 : 0
  name          = var.name
  description   = "FleetLock endpoint for Zincati"
  protocol_type = "HTTP"
  tags          = var.tags
}

resource "aws_apigatewayv2_integration" "function" {
  count                  = local.use_http_api ? 1 : 0
  api_id                 = aws_apigatewayv2_api.this[0].id
  integration_type       = "AWS_PROXY"
  integration_uri        = aws_lambda_function.this.invoke_arn
  payload_format_version = "2.0"
}

# The $default route: every path and method reaches the function and gets its
# {kind, value} answer.
resource "aws_apigatewayv2_route" "default" {
  count     = local.use_http_api ? 1 : 0
  api_id    = aws_apigatewayv2_api.this[0].id
  route_key = "$default"
  target    = "integrations/${aws_apigatewayv2_integration.function[0].id}"

  # checkov:skip=CKV_AWS_309: Zincati cannot send API Gateway credentials; requests are checked by the function.
}

resource "aws_apigatewayv2_stage" "default" {
  count       = local.use_http_api ? 1 : 0
  api_id      = aws_apigatewayv2_api.this[0].id
  name        = "$default"
  auto_deploy = true
  tags        = var.tags

  default_route_settings {
    throttling_rate_limit  = var.throttling_rate_limit
    throttling_burst_limit = var.throttling_burst_limit
  }

  dynamic "access_log_settings" {
    for_each = local.has_access_log ? [1] : []
    content {
      destination_arn = aws_cloudwatch_log_group.api_access[0].arn
      format          = jsonencode(local.access_log_fields)
    }
  }

  # checkov:skip=CKV_AWS_76: the access log is var.api_access_log, on by default; the function logs every request's decision either way.
}

resource "aws_lambda_permission" "api" {
  count         = local.use_http_api ? 1 : 0
  statement_id  = "AllowHttpApi"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.this.function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.this[0].execution_arn}/*"
}

# The one optional part: a custom domain whose URL survives a redeploy.
resource "aws_apigatewayv2_domain_name" "this" {
  count       = local.has_domain ? 1 : 0
  domain_name = var.domain_name
  tags        = var.tags

  domain_name_configuration {
    certificate_arn = var.certificate_arn
    endpoint_type   = "REGIONAL"
    security_policy = "TLS_1_2"
  }
}

resource "aws_apigatewayv2_api_mapping" "this" {
  count       = local.has_domain ? 1 : 0
  api_id      = aws_apigatewayv2_api.this[0].id
  domain_name = aws_apigatewayv2_domain_name.this[0].id
  stage       = aws_apigatewayv2_stage.default[0].id
}

resource "aws_cloudwatch_metric_alarm" "server_errors" {
  count               = local.use_http_api ? 1 : 0
  alarm_name          = "${var.name}-server-errors"
  alarm_description   = "The FleetLock API answers 5xx: DynamoDB is failing or the function is. A full group is a 423 and never counts here."
  namespace           = "AWS/ApiGateway"
  metric_name         = "5xx"
  dimensions          = { ApiId = aws_apigatewayv2_api.this[0].id }
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
