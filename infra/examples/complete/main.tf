# Everything on: slot events, pauses that follow your alarms, an existing SNS
# topic for the alarms, a settle time and windows, and a custom domain whose
# base_url survives a redeploy. Build the zip first (scripts/build-lambda).

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
  groups          = { default = 1, workers = 3, db = 1, fleetlock-check = 2 }
  settle          = { workers = "10m", db = "30m" }
  maintenance_windows = {
    db = [{ days = ["Sat", "Sun"], start_time = "22:00", length_minutes = 120 }]
  }
  time_zone = "Europe/Berlin"
  clients   = var.clients

  slot_events     = true
  alarm_pauses    = { "api-5xx" = ["*"], "db-latency" = ["db"] }
  alarm_topic_arn = var.alarm_topic_arn

  domain_name     = var.domain_name
  certificate_arn = var.certificate_arn

  tags = {
    service = "fleetlock"
  }
}

variable "clients" {
  description = "FLEETLOCK_CLIENTS entries from `fleetlock credential` (salted hashes only)."
  type        = list(string)
  sensitive   = true
}

variable "alarm_topic_arn" {
  description = "The SNS topic your on-call already reads."
  type        = string
}

variable "domain_name" {
  description = "e.g. fleetlock.example.com"
  type        = string
}

variable "certificate_arn" {
  description = "An ACM certificate for domain_name, in eu-west-1."
  type        = string
}

output "base_url" {
  value = module.fleetlock.base_url
}

output "custom_domain_target" {
  description = "Point a CNAME (or alias) record of domain_name at this."
  value       = module.fleetlock.custom_domain_target
}

output "zincati_config_command" {
  value = module.fleetlock.zincati_config_command
}
