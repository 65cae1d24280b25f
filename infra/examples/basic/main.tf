# The smallest use of the module: build the zip first (scripts/build-lambda).

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

module "fleetlock" {
  source = "../../"

  lambda_zip_path = "${path.module}/../../../target/lambda/fleetlock-arm64.zip"
  architecture    = "arm64"
  groups          = { default = 1, workers = 3, fleetlock-check = 2 }
  clients         = var.clients
}

variable "clients" {
  description = "FLEETLOCK_CLIENTS entries from `fleetlock credential` (salted hashes only)."
  type        = list(string)
  sensitive   = true
}

output "zincati_config_command" {
  value = module.fleetlock.zincati_config_command
}

output "table_name" {
  value = module.fleetlock.table_name
}
