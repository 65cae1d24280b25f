variable "name" {
  description = "Name prefix of every resource (table, function, role, API, log groups)."
  type        = string
  default     = "fleetlock"
  nullable    = false

  validation {
    condition     = can(regex("^[a-zA-Z0-9-]{1,40}$", var.name))
    error_message = "name must be 1 to 40 letters, digits or dashes."
  }
}

variable "lambda_zip_path" {
  description = "Path to the built Lambda zip (a `bootstrap` binary), e.g. from scripts/build-lambda: target/lambda/fleetlock-arm64.zip. Or give lambda_s3_bucket and lambda_s3_key instead."
  type        = string
  default     = null
}

variable "lambda_s3_bucket" {
  description = "The S3 bucket of the Lambda zip, instead of lambda_zip_path (with lambda_s3_key)."
  type        = string
  default     = null
}

variable "lambda_s3_key" {
  description = "The S3 key of the Lambda zip in lambda_s3_bucket."
  type        = string
  default     = null
}

variable "lambda_s3_object_version" {
  description = "The zip's object version in a versioned bucket: a new version updates the functions."
  type        = string
  default     = null
}

variable "architecture" {
  description = "CPU architecture of the function; must match the zip."
  type        = string
  default     = "arm64"
  nullable    = false

  validation {
    condition     = contains(["arm64", "x86_64"], var.architecture)
    error_message = "architecture must be arm64 or x86_64."
  }
}

variable "groups" {
  description = "FLEETLOCK_GROUPS: slots per group, e.g. { default = 1, workers = 3 }; \"*\" gives every other valid group that many. A map without \"default\" (or \"*\") refuses every node that has no [identity] group."
  type        = map(number)
  default     = { default = 1 }
  nullable    = false

  validation {
    condition     = length(var.groups) > 0 && alltrue([for group, slots in var.groups : can(regex("^([a-zA-Z0-9.-]{1,64}|\\*)$", group)) && slots >= 0 && slots <= 500 && floor(slots) == slots])
    error_message = "groups maps group names (letters, digits, '.', '-', at most 64) or \"*\" to whole slot counts from 0 to 500."
  }
}

variable "settle" {
  description = "FLEETLOCK_SETTLE: settle time after each release per group, e.g. { workers = \"10m\", \"*\" = \"2m\" }. After any release the group grants no new slot until it has passed. Empty: none."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    # The duration in seconds, from its h, m and s parts, at most 24h.
    condition = alltrue([for group, time in var.settle : can(regex("^([a-zA-Z0-9.-]{1,64}|\\*)$", group)) && time != "" && try(alltrue([
      for seconds in [sum([for i, part in regex("^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$", time) : tonumber(coalesce(part, "0")) * [3600, 60, 1][i]])] :
      seconds <= 86400
    ]), false)])
    error_message = "settle maps group names or \"*\" to durations such as \"90s\", \"10m\" or \"1h30m\", at most 24h (pause the group for longer)."
  }
}

variable "lease" {
  description = "FLEETLOCK_LEASE: per group, how long a holder keeps its slot for sure, from 30m to 168h, e.g. { workers = \"6h\" }. Past it, the next node to ask while the group is full takes that slot: this gives up FleetLock's hold-on-failure (a node whose update failed keeps its slot so the rollout stops). Empty: no lease."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    # The duration in seconds, from its h, m and s parts, from 30m to a week.
    condition = alltrue([for group, time in var.lease : can(regex("^([a-zA-Z0-9.-]{1,64}|\\*)$", group)) && try(alltrue([
      for seconds in [sum([for i, part in regex("^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$", time) : tonumber(coalesce(part, "0")) * [3600, 60, 1][i]])] :
      seconds >= 1800 && seconds <= 604800
    ]), false)])
    error_message = "lease maps group names or \"*\" to durations such as \"6h\" or \"1h30m\", from 30m to 168h."
  }
}

variable "drain" {
  description = "FLEETLOCK_DRAIN: per group, a drain gate: a drain timeout from 1m to 24h, then \":hold\" (the default) or \":grant\", e.g. { workers = \"15m\", db = \"30m:grant\" }. A node's first request for a free slot reserves it, and it reboots only once a hook or a person confirms it was drained (the drained function, drain.tf). Needs slot_events. Empty: no gate."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    # The timeout in seconds, from its h, m and s parts, from 1m to 24h.
    condition = alltrue([for group, gate in var.drain : can(regex("^([a-zA-Z0-9.-]{1,64}|\\*)$", group)) && try(alltrue([
      for seconds in [sum([for i, part in slice(regex("^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?(?::(hold|grant))?$", gate), 0, 3) : tonumber(coalesce(part, "0")) * [3600, 60, 1][i]])] :
      seconds >= 60 && seconds <= 86400
    ]), false)])
    error_message = "drain maps group names or \"*\" to a drain timeout such as \"15m\", from 1m to 24h, optionally followed by \":hold\" (the default) or \":grant\"."
  }
}

variable "return_gate" {
  description = "FLEETLOCK_RETURN: per group, a return gate: a return timeout from 1m to 24h, e.g. { workers = \"20m\" }. A node's steady-state leaves its slot counted as returning until a hook or a person confirms the node is back in service (the drained function's returned action, or fleetlock returned); past the timeout the group's rollout stops until a person resumes it. Needs slot_events and a hook that knows the returning state (contrib/drain-hook from 0.2). Empty: no gate."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    # The timeout in seconds, from its h, m and s parts, from 1m to 24h.
    condition = alltrue([for group, timeout in var.return_gate : can(regex("^([a-zA-Z0-9.-]{1,64}|\\*)$", group)) && try(alltrue([
      for seconds in [sum([for i, part in regex("^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$", timeout) : tonumber(coalesce(part, "0")) * [3600, 60, 1][i]])] :
      seconds >= 60 && seconds <= 86400
    ]), false)])
    error_message = "return_gate maps group names or \"*\" to a return timeout such as \"20m\", from 1m to 24h."
  }
}

variable "canary" {
  description = "FLEETLOCK_CANARY: per group, a canary then waves, BAKE[:WAVES[:BACK]], e.g. { workers = \"30m:1+3\" }: a rollout's first node goes alone, the next wait until it is back in service and the bake (1m to 24h) has passed, then 3 go, then the rest at the group's slots. A wave's node out longer than BACK (15m to 24h, default 1h) stops the group's rollout: the drained function's sweep, deployed wherever a canary is set, notices it. Empty: no canary."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    # The bake in seconds, from its h, m and s parts, from 1m to 24h; the
    # waves begin with the canary's 1; the rest (wave sizes up to 500, BACK
    # from 15m to 24h) the deploy's check reads as the function does.
    condition = alltrue([for group, canary in var.canary : can(regex("^([a-zA-Z0-9.-]{1,64}|\\*)$", group)) && try(alltrue([
      for seconds in [sum([for i, part in slice(regex("^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?(?::(1(?:\\+[0-9]{1,3}){0,4}))?(?::((?:[0-9]+h)?(?:[0-9]+m)?(?:[0-9]+s)?))?$", canary), 0, 3) : tonumber(coalesce(part, "0")) * [3600, 60, 1][i]])] :
      seconds >= 60 && seconds <= 86400
    ]), false)])
    error_message = "canary maps group names or \"*\" to BAKE[:WAVES[:BACK]] such as \"30m\" or \"30m:1+3:2h\": a bake from 1m to 24h, waves beginning with the canary's 1 (at most 5), a BACK from 15m to 24h."
  }
}

variable "zones" {
  description = "FLEETLOCK_ZONES: the groups whose nodes go out of service one zone at a time, e.g. [\"workers\"]: a node asking as workers.us-east-1a (its group, a dot, its zone) takes a slot of workers, and while nodes of one zone are out those of another hear another_zone_out. Each group named in groups with its slots (never \"*\"). contrib/butane/fleetlock-zone-group.bu sets a node's group from its Availability Zone. Empty: no group is split."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for group in var.zones : can(regex("^[a-zA-Z0-9.-]{1,64}$", group))]) && length(distinct(var.zones)) == length(var.zones)
    error_message = "zones lists group names (letters, digits, '.' and '-', at most 64), each once; \"*\" cannot be split by zone."
  }
}

variable "max_wildcard_groups" {
  description = "FLEETLOCK_MAX_WILDCARD_GROUPS: how many groups that only \"*=N\" covers may come into existence; past it a new one is refused (too_many_groups), so a credential scoped to \"*\" cannot fill the table."
  type        = number
  default     = 100
  nullable    = false

  validation {
    condition     = var.max_wildcard_groups >= 1 && var.max_wildcard_groups <= 2000 && floor(var.max_wildcard_groups) == var.max_wildcard_groups
    error_message = "max_wildcard_groups must be a whole number from 1 to 2000."
  }
}

variable "maintenance_windows" {
  description = "FLEETLOCK_WINDOWS: maintenance windows per group in the words of Zincati's periodic strategy, e.g. { workers = [{ days = [\"Sat\", \"Sun\"], start_time = \"22:00\", length_minutes = 120 }] }. Outside them every pre-reboot of the group is refused. Empty: always open."
  type = map(list(object({
    days           = list(string)
    start_time     = string
    length_minutes = number
  })))
  default  = {}
  nullable = false

  validation {
    condition = alltrue(flatten([for group, windows in var.maintenance_windows : concat([can(regex("^([a-zA-Z0-9.-]{1,64}|\\*)$", group))], [
      for window in windows : length(window.days) > 0 && alltrue([for day in window.days : contains(["mon", "tue", "wed", "thu", "fri", "sat", "sun", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"], lower(day))]) && can(regex("^([01][0-9]|2[0-3]):[0-5][0-9]$", window.start_time)) && window.length_minutes >= 1 && window.length_minutes <= 10080 && floor(window.length_minutes) == window.length_minutes
    ])]))
    error_message = "maintenance_windows maps group names or \"*\" to windows of days (Mon to Sun or Monday to Sunday, in any case, as the function and Zincati read them), a start_time HH:MM and whole length_minutes from 1 to 10080 (a week)."
  }
}

variable "time_zone" {
  description = "FLEETLOCK_TIME_ZONE: the zone of the maintenance windows, UTC (recommended) or an IANA name such as Europe/Berlin. \"localtime\" is refused."
  type        = string
  default     = "UTC"
  nullable    = false

  validation {
    condition     = can(regex("^[A-Za-z0-9/_+-]+$", var.time_zone))
    error_message = "time_zone must be UTC or an IANA name such as Europe/Berlin."
  }
}

variable "endpoint" {
  description = "How Zincati reaches the function: \"http_api\" (API Gateway HTTP API: throttling, access log, custom domain), \"function_url\" (a Lambda function URL: no $1.00 per million requests, but no throttling, no access log, no custom domain; reserved concurrency is the only brake) or \"private_rest_api\" (a private REST API reachable only through execute-api VPC endpoints, the private_* variables; throttling; nothing outside those VPCs can reach it)."
  type        = string
  default     = "http_api"
  nullable    = false

  validation {
    condition     = contains(["http_api", "function_url", "private_rest_api"], var.endpoint)
    error_message = "endpoint must be http_api, function_url or private_rest_api."
  }
}

variable "private_vpc_endpoint_ids" {
  description = "endpoint = \"private_rest_api\": existing execute-api interface VPC endpoints (vpce-...) through which the nodes reach the API. Empty: one is created in private_vpc_id, private_subnet_ids and private_security_group_ids."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for id in var.private_vpc_endpoint_ids : can(regex("^vpce-[0-9a-f]{8,17}$", id))])
    error_message = "private_vpc_endpoint_ids are VPC endpoint ids (vpce-...)."
  }
}

variable "private_vpc_id" {
  description = "endpoint = \"private_rest_api\" without private_vpc_endpoint_ids: the VPC of the execute-api interface endpoint created for the nodes."
  type        = string
  default     = null

  validation {
    condition     = var.private_vpc_id == null || can(regex("^vpc-[0-9a-f]{8,17}$", var.private_vpc_id))
    error_message = "private_vpc_id is a VPC id (vpc-...)."
  }
}

variable "private_subnet_ids" {
  description = "endpoint = \"private_rest_api\" without private_vpc_endpoint_ids: the subnets of the endpoint created (one per Availability Zone; each costs hours)."
  type        = list(string)
  default     = []
  nullable    = false
}

variable "private_security_group_ids" {
  description = "endpoint = \"private_rest_api\" without private_vpc_endpoint_ids: security groups of the endpoint created; they must admit HTTPS (443) from the nodes."
  type        = list(string)
  default     = []
  nullable    = false
}

variable "private_dns_enabled" {
  description = "Private DNS on the endpoint created. false (the default): Zincati uses the endpoint-specific host name in the base_url output. true sends every public API Gateway host name in that VPC to this endpoint, which breaks calls from the VPC to any API that is not private."
  type        = bool
  default     = false
  nullable    = false
}

variable "private_source_cidrs" {
  description = "endpoint = \"private_rest_api\": if given, the API's resource policy also requires the caller's address (aws:VpcSourceIp, as the VPC endpoint sees it) to be in one of these CIDR blocks, e.g. the nodes' subnets. Networks that reach the endpoint through peering, a transit gateway or a VPN are admitted or not by these, not by the security group alone."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for cidr in var.private_source_cidrs : can(cidrhost(cidr, 0))])
    error_message = "private_source_cidrs are CIDR blocks such as 10.0.0.0/16."
  }
}

variable "private_api_access_log" {
  description = "Give the private REST API an access log. REST APIs log through the account's API Gateway CloudWatch Logs role (one per region, in API Gateway's settings), which must be set already: this module never sets it, since setting it replaces the one there."
  type        = bool
  default     = false
  nullable    = false
}

variable "api_access_log" {
  description = "Keep the HTTP API's access log (about 150 bytes a call). The function's own decision line already names every request."
  type        = bool
  default     = true
  nullable    = false
}

variable "platform_log_level" {
  description = "Lambda's system log level. WARN drops the platform.start and platform.report lines (about 500 bytes a call), and with them each call's logged duration, billed duration, memory used and init duration."
  type        = string
  default     = "INFO"
  nullable    = false

  validation {
    condition     = contains(["DEBUG", "INFO", "WARN"], var.platform_log_level)
    error_message = "platform_log_level must be DEBUG, INFO or WARN."
  }
}

variable "log_level" {
  description = "RUST_LOG of the functions. No trace: at that level the Lambda runtime would log each raw event, a node's Authorization header included (the functions never log at trace, whatever RUST_LOG says)."
  type        = string
  default     = "info"
  nullable    = false

  validation {
    condition     = contains(["error", "warn", "info", "debug"], var.log_level)
    error_message = "log_level must be one of error, warn, info, debug."
  }
}

variable "log_retention_days" {
  description = "How long the functions' and the API's logs are kept: one of CloudWatch Logs' values, as the SAM parameter LogRetentionDays."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 3653."
  }
}

variable "table_deletion_protection" {
  description = "DynamoDB deletion protection of the lock table, so that a destroy cannot silently drop held locks."
  type        = bool
  default     = true
  nullable    = false
}

variable "global_table" {
  description = "Make the lock table a global table in multi-Region strong consistency (MRSC), the one shared by this region and two others of its Region set (US: us-east-1, us-east-2, us-west-2; EU: eu-west-1, eu-west-2, eu-west-3, eu-central-1; AP: ap-northeast-1, ap-northeast-2, ap-northeast-3): two replica_regions, or one and a witness_region. A conditional write is then decided against every region's latest version, so one semaphore holds across the three. Deploy the module in each replica region with existing_table_name (examples/three-regions). Only a new, empty table can be made MRSC: an existing deployment moves as docs/deploy.md says. null: one region."
  type = object({
    replica_regions = list(string)
    witness_region  = optional(string)
  })
  default = null

  validation {
    condition     = var.global_table == null || try(length(var.global_table.replica_regions) + (var.global_table.witness_region == null ? 0 : 1) == 2, false)
    error_message = "global_table needs exactly three regions with this one: two replica_regions, or one replica_region and a witness_region (MRSC's only shapes)."
  }

  validation {
    condition     = var.global_table == null || try(length(distinct(concat(var.global_table.replica_regions, compact([var.global_table.witness_region])))) == length(var.global_table.replica_regions) + (var.global_table.witness_region == null ? 0 : 1), false)
    error_message = "global_table names each region once: a replica region is never the witness too."
  }
}

variable "existing_table_name" {
  description = "Serve this region from its replica of a global table made by the module in another region (global_table there; its table_name output), instead of making a table. The functions compare their settings with the other regions' (FLEETLOCK_REGION) and refuse a group served differently elsewhere. Slot events run where the table is made, not here; the drain and return gates still work here, their events coming from there. null: this module makes the table."
  type        = string
  default     = null

  validation {
    condition     = var.existing_table_name == null || can(regex("^[A-Za-z0-9_.-]{3,255}$", var.existing_table_name))
    error_message = "existing_table_name is a DynamoDB table name: 3 to 255 letters, digits, '_', '-' or '.'."
  }
}

variable "throttling_rate_limit" {
  description = "Steady requests per second the API accepts. Each node sends about one request per 300 s while it waits for a slot."
  type        = number
  default     = 50
  nullable    = false

  validation {
    condition     = var.throttling_rate_limit >= 1
    error_message = "throttling_rate_limit must be at least 1, as the SAM parameter ThrottlingRateLimit: 0 would refuse every node."
  }
}

variable "throttling_burst_limit" {
  description = "Requests the API accepts in a burst."
  type        = number
  default     = 100
  nullable    = false

  validation {
    condition     = var.throttling_burst_limit >= 1 && floor(var.throttling_burst_limit) == var.throttling_burst_limit
    error_message = "throttling_burst_limit must be a whole number of at least 1, as the SAM parameter ThrottlingBurstLimit."
  }
}

variable "domain_name" {
  description = "Optional custom domain (e.g. fleetlock.example.com); base_url is baked into every node's config, so a URL that survives a redeploy is worth having. Needs certificate_arn. null: none."
  type        = string
  default     = null

  validation {
    condition     = var.domain_name == null || can(regex("^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]{2,63}$", var.domain_name))
    error_message = "domain_name must be a lower-case domain name such as fleetlock.example.com, or null."
  }
}

variable "certificate_arn" {
  description = "ACM certificate for domain_name, in the provider's region. Required with domain_name, and only with it."
  type        = string
  default     = null

  validation {
    condition     = var.certificate_arn == null || can(regex("^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[A-Za-z0-9-]+$", var.certificate_arn))
    error_message = "certificate_arn must be an ACM certificate ARN (arn:aws:acm:REGION:ACCOUNT:certificate/ID), or null."
  }
}

variable "tags" {
  description = "Tags for every resource that takes them."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "clients" {
  description = "FLEETLOCK_CLIENTS: who may call, one NAME:GROUPS:SALT:SHA256 entry each, made by `fleetlock credential`. Only salted hashes: the secrets stay in the nodes' base_url. Required unless allow_anonymous is true."
  type        = list(string)
  default     = []
  nullable    = false
  sensitive   = true

  validation {
    condition     = alltrue([for entry in var.clients : can(regex("^[^:\\s]+:[^:\\s]+:[0-9a-f]+:[0-9a-f]{64}$", entry))])
    error_message = "each of clients must be a NAME:GROUPS:SALT:SHA256 entry from `fleetlock credential`."
  }
}

variable "allow_anonymous" {
  description = "Turns client authentication off. An HTTP API is reachable from the internet: leave this false unless something in front of it restricts access."
  type        = bool
  default     = false
  nullable    = false
}

variable "api_memory_size" {
  description = "Memory of the API function in MB, which sets its share of a CPU (a full core at 1769 MB) and its price per millisecond. The other functions keep 128. See docs/costs-and-sizing.md."
  type        = number
  default     = 128
  nullable    = false

  validation {
    condition     = var.api_memory_size >= 128 && var.api_memory_size <= 10240 && floor(var.api_memory_size) == var.api_memory_size
    error_message = "api_memory_size must be a whole number of MB from 128 to 10240."
  }
}

variable "reserved_concurrency" {
  description = "Reserved concurrent executions of the function, as AWS has it: -1 reserves none, 0 stops every call, N reserves N. null: none behind the HTTP API (its throttling bounds the load; new accounts often have too little quota to reserve any), and 10 behind a function URL, where it is the only brake on a flood."
  type        = number
  default     = null

  validation {
    condition     = var.reserved_concurrency == null ? true : var.reserved_concurrency >= -1 && floor(var.reserved_concurrency) == var.reserved_concurrency
    error_message = "reserved_concurrency must be -1, 0 or a whole number, or null."
  }
}

variable "oldest_holder_alarm_seconds" {
  description = "Alarm when a node has held its slot longer than this. A reboot takes minutes; a node whose update failed keeps its slot by design and stops its group."
  type        = number
  default     = 7200
  nullable    = false

  validation {
    condition     = var.oldest_holder_alarm_seconds >= 60
    error_message = "oldest_holder_alarm_seconds must be at least 60, as the SAM parameter OldestHolderAlarmSeconds."
  }
}

variable "server_error_alarm_threshold" {
  description = "Alarm when the API answers this many 5xx within 5 minutes."
  type        = number
  default     = 5
  nullable    = false

  validation {
    condition     = var.server_error_alarm_threshold >= 1
    error_message = "server_error_alarm_threshold must be at least 1, as the SAM parameter ServerErrorAlarmThreshold."
  }
}

variable "alarm_topic_arn" {
  description = "SNS topic that every alarm notifies. null: the module creates one (output alarm_topic_arn), with alarm_email subscribed if given."
  type        = string
  default     = null

  validation {
    condition     = var.alarm_topic_arn == null || can(regex("^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]{1,256}$", var.alarm_topic_arn))
    error_message = "alarm_topic_arn must be an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME), or null."
  }
}

variable "alarm_email" {
  description = "With the created topic: an email address subscribed to it. AWS sends a confirmation mail; nothing arrives until the link in it is followed. Terraform cannot delete a subscription that was never confirmed. null: none."
  type        = string
  default     = null

  validation {
    condition     = var.alarm_email == null || can(regex("^[^@\\s]+@[^@\\s]+$", var.alarm_email))
    error_message = "alarm_email must be an email address, or null."
  }
}

variable "alarm_pauses" {
  description = "FLEETLOCK_ALARM_PAUSES: CloudWatch alarms that pause groups while in ALARM, each alarm name to its groups ([\"*\"] for all), e.g. { \"api-5xx\" = [\"*\"], \"db-latency\" = [\"workers\", \"db\"] }. The alarm rule listens for these alarms only. Empty: no alarm pauses anything (and no alarm-pauses function is created)."
  type        = map(list(string))
  default     = {}
  nullable    = false

  validation {
    condition     = alltrue([for alarm, groups in var.alarm_pauses : alarm != "" && !strcontains(alarm, ";") && length(groups) > 0 && ((length(groups) == 1 && groups[0] == "*") || alltrue([for group in groups : can(regex("^[a-zA-Z0-9.-]{1,64}$", group))]))])
    error_message = "alarm_pauses maps alarm names to non-empty lists of group names, or to [\"*\"] alone for every group (as the function reads them: \"*\" beside a name is refused)."
  }
}

variable "slot_events" {
  description = "Turn every grant, release, pause and resume into an EventBridge event: a stream on the lock table, read by a second function (the same zip, handler slot-events). Nothing changes on the protocol path."
  type        = bool
  default     = false
  nullable    = false
}

variable "event_bus_name" {
  description = "The EventBridge bus (a name in this account and region) that slot events go to."
  type        = string
  default     = "default"
  nullable    = false
}

variable "slot_events_iterator_age_seconds" {
  description = "Alarm when slot events fall this far behind the table. Stream records live 24 hours: what is older is lost."
  type        = number
  default     = 3600
  nullable    = false

  validation {
    condition     = var.slot_events_iterator_age_seconds >= 60
    error_message = "slot_events_iterator_age_seconds must be at least 60, as the SAM parameter SlotEventsIteratorAgeSeconds."
  }
}

variable "permissions_boundary" {
  description = "An IAM permissions boundary (a policy ARN) for every role the module creates, as many organizations require. null: none."
  type        = string
  default     = null

  validation {
    condition     = var.permissions_boundary == null || can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:policy/.+$", var.permissions_boundary))
    error_message = "permissions_boundary must be an IAM policy ARN, or null."
  }
}

variable "role_path" {
  description = "The IAM path of every role the module creates."
  type        = string
  default     = "/"
  nullable    = false

  validation {
    condition     = can(regex("^/([A-Za-z0-9+=,.@_-]+/)*$", var.role_path))
    error_message = "role_path must begin and end with / (e.g. /fleetlock/)."
  }
}

variable "tracing_mode" {
  description = "X-Ray tracing of the functions: PassThrough (none of their own) or Active (each role then gets AWSXRayDaemonWriteAccess)."
  type        = string
  default     = "PassThrough"
  nullable    = false

  validation {
    condition     = contains(["PassThrough", "Active"], var.tracing_mode)
    error_message = "tracing_mode must be PassThrough or Active."
  }
}

variable "table_kms_key_arn" {
  description = "A customer managed KMS key for the lock table (and its stream). Every role that reads or writes the table (the functions', the operator policy) gets the key's use through DynamoDB only (kms:ViaService). null: the AWS managed key."
  type        = string
  default     = null

  validation {
    condition     = var.table_kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.table_kms_key_arn))
    error_message = "table_kms_key_arn is a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID)."
  }
}

variable "logs_kms_key_arn" {
  description = "A customer managed KMS key for the log groups; its key policy must let CloudWatch Logs (logs.REGION.amazonaws.com) use it. null: CloudWatch Logs' own encryption."
  type        = string
  default     = null
}

variable "queue_kms_key_arn" {
  description = "A customer managed KMS key for the slot events' on-failure queue; the slot-events role gets kms:GenerateDataKey and kms:Decrypt on it. null: SQS-managed encryption."
  type        = string
  default     = null
}

variable "topic_kms_key_arn" {
  description = "A customer managed KMS key for the created alarm topic; its key policy must let CloudWatch (cloudwatch.amazonaws.com) use it, or no alarm arrives. null: unencrypted (CloudWatch cannot publish under the aws/sns key)."
  type        = string
  default     = null
}
