# The data sources the mocked AWS provider answers, shared by every test
# file (mock_provider "aws" { source = "./tests/mocks" }).

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
