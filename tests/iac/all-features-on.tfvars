# The opt-in features switched on, for checkov: with the defaults it leaves out
# what their count switches off.
slot_events  = true
alarm_pauses = { "api-5xx" = ["*"] }
drain        = { workers = "15m" }
return_gate  = { workers = "20m" }
