# checkov's scan of the module making a global table (scripts/test).
lambda_zip_path = "tests/fleetlock.zip"
clients         = ["fleet:default:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
global_table    = { replica_regions = ["eu-west-2", "eu-west-3"] }
slot_events     = true
drain           = { default = "15m" }
