# One dashboard; its body is shared with the SAM template (tests/iac).

# One dashboard; its body is shared with the SAM template (tests/iac).
resource "aws_cloudwatch_dashboard" "this" {
  # Dashboards are account-wide: the region keeps two deployments apart.
  dashboard_name = "${var.name}-fleetlock-${data.aws_region.current.region}"
  dashboard_body = templatefile("${path.module}/dashboard.json.tftpl", {
    region                 = data.aws_region.current.region
    function               = aws_lambda_function.this.function_name
    function_log_group     = aws_cloudwatch_log_group.function.name
    api_id                 = local.use_http_api ? aws_apigatewayv2_api.this[0].id : "none"
    rest_api_name          = local.use_private_rest_api ? aws_api_gateway_rest_api.private[0].name : "none"
    slot_events_function   = var.slot_events ? aws_lambda_function.slot_events[0].function_name : "none"
    slot_events_log_group  = var.slot_events ? aws_cloudwatch_log_group.slot_events[0].name : aws_cloudwatch_log_group.function.name
    alarm_pauses_function  = local.alarm_pauses == 1 ? aws_lambda_function.alarm_pauses[0].function_name : "none"
    alarm_pauses_log_group = local.alarm_pauses == 1 ? aws_cloudwatch_log_group.alarm_pauses[0].name : aws_cloudwatch_log_group.function.name
  })
}
