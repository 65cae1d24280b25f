# One lock across three regions: the lock table is a global table in
# multi-Region strong consistency (MRSC), made in eu-west-1 with replicas in
# eu-west-2 and eu-west-3, and each region runs the API and its functions
# against its own replica. Nodes point at their own region's base_url; a
# person's commands work from any region (FLEETLOCK_TABLE is the same name in
# all three). One `terraform apply` makes all three. Build the zip first
# (scripts/build-lambda). docs/deploy.md, "One lock across regions", says
# what each region does and what an outage of one does.

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

provider "aws" {
  alias  = "london"
  region = "eu-west-2"
}

provider "aws" {
  alias  = "paris"
  region = "eu-west-3"
}

# The settings that decide grants (groups, settle, lease, drain, return
# gate, windows) must be the same in every region: a function refuses a group
# another region serves differently (500 settings_differ) rather than
# over-grant. One local, passed to all three, keeps them so.
locals {
  settings = {
    groups = { default = 1, workers = 3, db = 1, fleetlock-check = 2 }
    settle = { workers = "10m" }
    drain  = { db = "15m" }
  }
  zip = "${path.module}/../../../target/lambda/fleetlock-arm64.zip"
}

# Makes the global table, and reads its stream: slot events (and so the drain
# hook's events) come from this region only.
module "ireland" {
  source = "../../"

  name            = "fleetlock"
  lambda_zip_path = local.zip
  architecture    = "arm64"
  groups          = local.settings.groups
  settle          = local.settings.settle
  drain           = local.settings.drain
  clients         = var.clients
  slot_events     = true

  global_table = {
    replica_regions = ["eu-west-2", "eu-west-3"]
  }
}

module "london" {
  source    = "../../"
  providers = { aws = aws.london }

  name                = "fleetlock"
  existing_table_name = module.ireland.table_name
  lambda_zip_path     = local.zip
  architecture        = "arm64"
  groups              = local.settings.groups
  settle              = local.settings.settle
  drain               = local.settings.drain
  clients             = var.clients
}

module "paris" {
  source    = "../../"
  providers = { aws = aws.paris }

  name                = "fleetlock"
  existing_table_name = module.ireland.table_name
  lambda_zip_path     = local.zip
  architecture        = "arm64"
  groups              = local.settings.groups
  settle              = local.settings.settle
  drain               = local.settings.drain
  clients             = var.clients
}

variable "clients" {
  description = "FLEETLOCK_CLIENTS entries from `fleetlock credential` (salted hashes only); the same in every region, so a node's drop-in works against any."
  type        = list(string)
  sensitive   = true
}

output "base_urls" {
  description = "Each region's Zincati base_url: point a region's nodes at their own."
  value = {
    eu-west-1 = module.ireland.base_url
    eu-west-2 = module.london.base_url
    eu-west-3 = module.paris.base_url
  }
}

output "table_name" {
  description = "FLEETLOCK_TABLE for a person's commands, in any of the three regions."
  value       = module.ireland.table_name
}

output "global_table_regions" {
  value = module.ireland.global_table_regions
}
