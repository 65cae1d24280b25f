# A module's inputs as an infra team writes them, for `fleetlock config check
# --tfvars` (tests/iac/plan_terraform.py checks what it renders against
# Terraform): maps out of order, a number as a string, windows in a zone.
groups              = { workers = 3, default = 1, db = "1", "*" = 1 }
settle              = { workers = "10m", db = "30m" }
lease               = { workers = "6h", "*" = "2h" }
max_wildcard_groups = 20
maintenance_windows = {
  db      = [{ days = ["Sat", "Sun"], start_time = "22:00", length_minutes = 120 }]
  workers = [{ days = ["Mon", "Tue", "Wed", "Thu"], start_time = "09:00", length_minutes = 240 }, { days = ["Fri"], start_time = "09:00", length_minutes = 60 }]
}
time_zone    = "Europe/Berlin"
clients      = ["fleet:default,workers,db:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
alarm_pauses = { "db-latency" = ["db", "workers"], "api-5xx" = ["*"] }
drain               = { workers = "15m", "*" = "1h:grant" }
slot_events         = true
