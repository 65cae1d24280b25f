# Endpoint "function_url": the function URL, its permissions and its alarm.

# The function URL endpoint. Authorization NONE: Zincati sends HTTP Basic
# credentials, which the function checks. Since October 2025 a public URL needs
# both permissions; the second only for calls through the URL.
resource "aws_lambda_function_url" "this" {
  count              = local.use_function_url ? 1 : 0
  function_name      = aws_lambda_function.this.function_name
  authorization_type = "NONE"

  # checkov:skip=CKV_AWS_258: Zincati cannot sign requests with AWS credentials; the function checks its HTTP Basic credentials before anything else.
}

resource "aws_lambda_permission" "url_public_access" {
  count                  = local.use_function_url ? 1 : 0
  statement_id           = "FunctionURLAllowPublicAccess"
  action                 = "lambda:InvokeFunctionUrl"
  function_name          = aws_lambda_function.this.function_name
  principal              = "*"
  function_url_auth_type = "NONE"

  # checkov:skip=CKV_AWS_301: a public function URL is the point of endpoint = "function_url"; the function checks HTTP Basic credentials before anything else.
}

resource "aws_lambda_permission" "url_invoke" {
  count                    = local.use_function_url ? 1 : 0
  statement_id             = "FunctionURLAllowInvokeAction"
  action                   = "lambda:InvokeFunction"
  function_name            = aws_lambda_function.this.function_name
  principal                = "*"
  invoked_via_function_url = true

  # checkov:skip=CKV_AWS_301: only through the function URL (invoked_via_function_url), whose callers the function authenticates.
}

resource "aws_cloudwatch_metric_alarm" "function_url_server_errors" {
  count               = local.use_function_url ? 1 : 0
  alarm_name          = "${var.name}-server-errors"
  alarm_description   = "The FleetLock function URL answers 5xx: DynamoDB is failing or the function is, or reserved concurrency throttles it. A full group is a 423 and never counts here."
  namespace           = "AWS/Lambda"
  metric_name         = "Url5xxCount"
  dimensions          = { FunctionName = aws_lambda_function.this.function_name }
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
