variable "name" {
  description = "Name prefix of every resource (table, function, role, API, log groups)."
  type        = string
  default     = "fleetlock"

  validation {
    condition     = can(regex("^[a-zA-Z0-9-]{1,40}$", var.name))
    error_message = "name must be 1 to 40 letters, digits or dashes."
  }
}

variable "lambda_zip_path" {
  description = "Path to the built Lambda zip (a `bootstrap` binary), e.g. from scripts/build-lambda: target/lambda/fleetlock-arm64.zip."
  type        = string
}

variable "architecture" {
  description = "CPU architecture of the function; must match the zip."
  type        = string
  default     = "arm64"

  validation {
    condition     = contains(["arm64", "x86_64"], var.architecture)
    error_message = "architecture must be arm64 or x86_64."
  }
}

variable "groups" {
  description = "FLEETLOCK_GROUPS: slots per group, e.g. \"default=1,workers=3\". A list without \"default\" (or \"*=N\") refuses every node that has no [identity] group."
  type        = string
  default     = "default=1"

  validation {
    condition     = can(regex("^[a-zA-Z0-9.*=, -]+$", var.groups))
    error_message = "groups must look like \"default=1,workers=3\"."
  }
}

variable "log_level" {
  description = "RUST_LOG of the function."
  type        = string
  default     = "info"

  validation {
    condition     = contains(["error", "warn", "info", "debug", "trace"], var.log_level)
    error_message = "log_level must be one of error, warn, info, debug, trace."
  }
}

variable "log_retention_days" {
  description = "How long the function's and the API's logs are kept."
  type        = number
  default     = 30
}

variable "table_deletion_protection" {
  description = "DynamoDB deletion protection of the lock table, so that a destroy cannot silently drop held locks."
  type        = bool
  default     = true
}

variable "throttling_rate_limit" {
  description = "Steady requests per second the API accepts. Each node sends about one request per 300 s while it waits for a slot."
  type        = number
  default     = 50
}

variable "throttling_burst_limit" {
  description = "Requests the API accepts in a burst."
  type        = number
  default     = 100
}

variable "domain_name" {
  description = "Optional custom domain (e.g. fleetlock.example.com); base_url is baked into every node's config, so a URL that survives a redeploy is worth having. Empty for none."
  type        = string
  default     = ""
}

variable "certificate_arn" {
  description = "ACM certificate for domain_name, in the provider's region. Required with domain_name."
  type        = string
  default     = ""
}

variable "tags" {
  description = "Tags for every resource that takes them."
  type        = map(string)
  default     = {}
}
