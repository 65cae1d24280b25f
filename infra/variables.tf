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

variable "settle" {
  description = "FLEETLOCK_SETTLE: settle time after each release per group, e.g. \"workers=10m,*=2m\". After any release the group grants no new slot until it has passed. Empty: none."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^[a-zA-Z0-9.*=,hms -]*$", var.settle))
    error_message = "settle must look like \"workers=10m,*=2m\"."
  }
}

variable "max_wildcard_groups" {
  description = "FLEETLOCK_MAX_WILDCARD_GROUPS: how many groups that only \"*=N\" covers may come into existence; past it a new one is refused (too_many_groups), so a credential scoped to \"*\" cannot fill the table."
  type        = number
  default     = 100

  validation {
    condition     = var.max_wildcard_groups >= 1 && var.max_wildcard_groups <= 2000 && floor(var.max_wildcard_groups) == var.max_wildcard_groups
    error_message = "max_wildcard_groups must be a whole number from 1 to 2000."
  }
}

variable "maintenance_windows" {
  description = "FLEETLOCK_WINDOWS: maintenance windows per group in the words of Zincati's periodic strategy, separated by ';': \"workers: days=Sat,Sun start_time=22:00 length_minutes=120\". Outside them every pre-reboot of the group is refused. Empty: always open."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^[a-zA-Z0-9.*:;=,_ -]*$", var.maintenance_windows))
    error_message = "maintenance_windows must look like \"workers: days=Sat,Sun start_time=22:00 length_minutes=120\"."
  }
}

variable "time_zone" {
  description = "FLEETLOCK_TIME_ZONE: the zone of the maintenance windows, UTC (recommended) or an IANA name such as Europe/Berlin. \"localtime\" is refused."
  type        = string
  default     = "UTC"

  validation {
    condition     = can(regex("^[A-Za-z0-9/_+-]+$", var.time_zone))
    error_message = "time_zone must be UTC or an IANA name such as Europe/Berlin."
  }
}

variable "endpoint" {
  description = "How Zincati reaches the function: \"http_api\" (API Gateway HTTP API: throttling, access log, custom domain) or \"function_url\" (a Lambda function URL: no $1.00 per million requests, but no throttling, no access log, no custom domain; reserved concurrency is the only brake)."
  type        = string
  default     = "http_api"

  validation {
    condition     = contains(["http_api", "function_url"], var.endpoint)
    error_message = "endpoint must be http_api or function_url."
  }
}

variable "api_access_log" {
  description = "Keep the HTTP API's access log (about 150 bytes a call). The function's own decision line already names every request."
  type        = bool
  default     = true
}

variable "platform_log_level" {
  description = "Lambda's system log level. WARN drops the platform.start and platform.report lines (about 500 bytes a call), and with them each call's logged duration, billed duration, memory used and init duration."
  type        = string
  default     = "INFO"

  validation {
    condition     = contains(["DEBUG", "INFO", "WARN"], var.platform_log_level)
    error_message = "platform_log_level must be DEBUG, INFO or WARN."
  }
}

variable "log_level" {
  description = "RUST_LOG of the functions. No trace: at that level the Lambda runtime would log each raw event, a node's Authorization header included (the functions never log at trace, whatever RUST_LOG says)."
  type        = string
  default     = "info"

  validation {
    condition     = contains(["error", "warn", "info", "debug"], var.log_level)
    error_message = "log_level must be one of error, warn, info, debug."
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

  validation {
    condition     = var.throttling_rate_limit >= 1
    error_message = "throttling_rate_limit must be at least 1, as the SAM parameter ThrottlingRateLimit: 0 would refuse every node."
  }
}

variable "throttling_burst_limit" {
  description = "Requests the API accepts in a burst."
  type        = number
  default     = 100

  validation {
    condition     = var.throttling_burst_limit >= 1 && floor(var.throttling_burst_limit) == var.throttling_burst_limit
    error_message = "throttling_burst_limit must be a whole number of at least 1, as the SAM parameter ThrottlingBurstLimit."
  }
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

variable "clients" {
  description = "FLEETLOCK_CLIENTS: who may call, as NAME:GROUPS:SALT:SHA256 entries separated by spaces, made by `fleetlock credential`. Only salted hashes: the secrets stay in the nodes' base_url. Required unless allow_anonymous is true."
  type        = string
  default     = ""
  sensitive   = true
}

variable "allow_anonymous" {
  description = "Turns client authentication off. An HTTP API is reachable from the internet: leave this false unless something in front of it restricts access."
  type        = bool
  default     = false
}

variable "reserved_concurrency" {
  description = "Reserved concurrent executions of the function. 0: none reserved with endpoint http_api (its throttling bounds the load; new accounts often have too little quota to reserve any), and 10 with function_url, where it is the only brake on a flood."
  type        = number
  default     = 0
}

variable "oldest_holder_alarm_seconds" {
  description = "Alarm when a node has held its slot longer than this. A reboot takes minutes; a node whose update failed keeps its slot by design and stops its group."
  type        = number
  default     = 7200
}

variable "server_error_alarm_threshold" {
  description = "Alarm when the API answers this many 5xx within 5 minutes."
  type        = number
  default     = 5
}

variable "alarm_topic_arn" {
  description = "SNS topic that every alarm notifies. Empty: the module creates one (output alarm_topic_arn), with alarm_email subscribed if given."
  type        = string
  default     = ""
}

variable "alarm_email" {
  description = "With the created topic: an email address subscribed to it. AWS sends a confirmation mail; nothing arrives until the link in it is followed. Terraform cannot delete a subscription that was never confirmed."
  type        = string
  default     = ""

  validation {
    condition     = var.alarm_email == "" || can(regex("^[^@\\s]+@[^@\\s]+$", var.alarm_email))
    error_message = "alarm_email must be an email address, or empty."
  }
}

variable "alarm_pauses" {
  description = "FLEETLOCK_ALARM_PAUSES: CloudWatch alarms that pause groups while in ALARM, ';'-separated, each ALARM=GROUPS with GROUPS '*' or a comma list, e.g. \"api-5xx=*;db-latency=workers,db\". Empty: no alarm pauses anything (and no alarm-pauses function is created)."
  type        = string
  default     = ""
}

variable "slot_events" {
  description = "Turn every grant, release, pause and resume into an EventBridge event: a stream on the lock table, read by a second function (the same zip, handler slot-events). Nothing changes on the protocol path."
  type        = bool
  default     = false
}

variable "event_bus_name" {
  description = "The EventBridge bus (a name in this account and region) that slot events go to."
  type        = string
  default     = "default"
}

variable "slot_events_iterator_age_seconds" {
  description = "Alarm when slot events fall this far behind the table. Stream records live 24 hours: what is older is lost."
  type        = number
  default     = 3600
}
