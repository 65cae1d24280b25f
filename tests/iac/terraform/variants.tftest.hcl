# Every variant of the module, planned with a mocked AWS provider
# (tests/iac/plan_terraform.py runs it on a copy for provider 5.100).

mock_provider "aws" {
  mock_data "aws_iam_policy_document" {
    defaults = {
      json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
    }
  }
  mock_data "aws_region" {
    defaults = {
      name = "eu-west-1"
    }
  }
  mock_data "aws_caller_identity" {
    defaults = {
      account_id = "123456789012"
    }
  }
  mock_data "aws_partition" {
    defaults = {
      partition = "aws"
    }
  }
}

variables {
  lambda_zip_path = "tests/fleetlock.zip"
  clients         = "fleet:default:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"
}

run "defaults_serve_through_an_http_api" {
  command = plan

  assert {
    condition     = length(aws_apigatewayv2_api.this) == 1 && length(aws_lambda_function_url.this) == 0
    error_message = "the default endpoint is an HTTP API"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_GROUPS"] == "default=1"
    error_message = "the function's groups are the default"
  }
  assert {
    condition     = aws_lambda_function.this.environment[0].variables["FLEETLOCK_AUTH"] == "required"
    error_message = "clients given: authentication is required"
  }
  assert {
    condition     = length(aws_lambda_function.slot_events) == 0 && length(aws_lambda_function.alarm_pauses) == 0
    error_message = "no optional function by default"
  }
  assert {
    condition     = length(aws_sns_topic.alarms) == 1
    error_message = "a topic for the alarms is created when none is given"
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
    condition     = aws_dynamodb_table.locks.stream_enabled == true && aws_dynamodb_table.locks.stream_view_type == "NEW_AND_OLD_IMAGES"
    error_message = "the table streams both images"
  }
}

run "alarm_pauses_only" {
  command = plan

  variables {
    alarm_pauses = "api-5xx=*;db-latency=workers,db"
  }

  assert {
    condition     = length(aws_lambda_function.alarm_pauses) == 1 && length(aws_lambda_function.slot_events) == 0
    error_message = "the alarm-pauses function alone"
  }
  assert {
    condition     = aws_lambda_function.alarm_pauses[0].environment[0].variables["FLEETLOCK_ALARM_PAUSES"] == "api-5xx=*;db-latency=workers,db"
    error_message = "the alarms reach the function"
  }
}

run "everything_on" {
  command = plan

  variables {
    slot_events     = true
    alarm_pauses    = "api-5xx=*"
    alarm_email     = "oncall@example.com"
    settle          = "default=10m"
    domain_name     = "fleetlock.example.com"
    certificate_arn = "arn:aws:acm:eu-west-1:123456789012:certificate/0123"
  }

  assert {
    condition     = length(aws_lambda_function.slot_events) == 1 && length(aws_lambda_function.alarm_pauses) == 1
    error_message = "both optional functions"
  }
  assert {
    condition     = length(aws_sns_topic_subscription.alarm_email) == 1
    error_message = "the email subscribed to the created topic"
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

run "example_basic" {
  command = plan

  module {
    source = "./examples/basic"
  }

  variables {
    clients = "fleet:default,workers:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"
  }
}

run "example_function_url" {
  command = plan

  module {
    source = "./examples/function-url"
  }

  variables {
    clients = "fleet:default:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"
  }
}

run "example_complete" {
  command = plan

  module {
    source = "./examples/complete"
  }

  variables {
    clients         = "fleet:default,workers,db:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"
    alarm_topic_arn = "arn:aws:sns:eu-west-1:123456789012:oncall"
    domain_name     = "fleetlock.example.com"
    certificate_arn = "arn:aws:acm:eu-west-1:123456789012:certificate/0123"
  }

  assert {
    condition     = output.base_url == "https://fleetlock.example.com/"
    error_message = "base_url is the custom domain"
  }
}
