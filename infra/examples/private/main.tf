# The module for nodes in private subnets: a private REST API that nothing
# outside the VPC can reach, through an execute-api interface endpoint created
# in the nodes' subnets (private DNS off, so other APIs in the VPC keep
# working). Build the zip first (scripts/build-lambda).

terraform {
  required_version = ">= 1.5.0, < 2.0.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 6.29.0, < 7.0.0" # invoked_via_function_url came in 6.29.0
    }
  }
}

provider "aws" {
  region = "eu-west-1"
}

variable "vpc_id" {
  description = "The nodes' VPC."
  type        = string
}

variable "subnet_ids" {
  description = "The nodes' private subnets, one per Availability Zone."
  type        = list(string)
}

variable "clients" {
  description = "FLEETLOCK_CLIENTS entries from `fleetlock credential` (salted hashes only)."
  type        = list(string)
  sensitive   = true
}

data "aws_vpc" "nodes" {
  id = var.vpc_id
}

# HTTPS from the VPC to the endpoint, nothing else.
resource "aws_security_group" "fleetlock_endpoint" {
  name_prefix = "fleetlock-endpoint-"
  description = "HTTPS from the VPC to the FleetLock API endpoint"
  vpc_id      = var.vpc_id

  ingress {
    description = "HTTPS from the nodes"
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = [data.aws_vpc.nodes.cidr_block]
  }

  # checkov:skip=CKV2_AWS_5: attached to the VPC endpoint the module creates.
}

module "fleetlock" {
  source = "../../"

  lambda_zip_path            = "${path.module}/../../../target/lambda/fleetlock-arm64.zip"
  architecture               = "arm64"
  endpoint                   = "private_rest_api"
  private_vpc_id             = var.vpc_id
  private_subnet_ids         = var.subnet_ids
  private_security_group_ids = [aws_security_group.fleetlock_endpoint.id]
  private_source_cidrs       = [data.aws_vpc.nodes.cidr_block]
  groups                     = { default = 1 }
  clients                    = var.clients
}

# Zincati's base_url: the API through the endpoint's own host name.
output "base_url" {
  value = module.fleetlock.base_url
}

output "zincati_config_command" {
  value = module.fleetlock.zincati_config_command
}

output "table_name" {
  value = module.fleetlock.table_name
}
