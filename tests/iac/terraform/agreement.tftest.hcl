# One corpus of settings, two readers: `terraform test` plans each run below
# (a run with expect_failures must be refused at plan time, one without must
# plan), and tests/iac/plan_terraform.py gives each run's variables to
# `fleetlock config check --tfvars`, which must give the same verdict. The
# function's parser is the source of truth: a case where they disagree is a
# bug in the module (or in config check), never in the corpus.
#
# Each run's variables are complete on their own (no file-level variables
# block), so that the harness reads exactly what Terraform plans.

mock_provider "aws" {
  source = "./tests/mocks"
}

run "good_every_per_group_input_on_configured_groups" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1, workers = 3, db = 1 }
    settle          = { workers = "10m", db = "24h" }
    lease           = { workers = "6h", db = "30m" }
    slot_events     = true
    drain           = { workers = "15m", db = "24h:grant" }
    return_gate     = { workers = "20m", db = "1m" }
    maintenance_windows = {
      workers = [{ days = ["Saturday", "sun"], start_time = "22:00", length_minutes = 120 }]
      db      = [{ days = ["Mon"], start_time = "00:00", length_minutes = 10080 }]
    }
    time_zone    = "Europe/Berlin"
    alarm_pauses = { "api-5xx" = ["*"], "db-latency" = ["workers", "db"] }
  }
}

run "good_a_wildcard_covers_every_name" {
  command = plan
  variables {
    lambda_zip_path     = "tests/fleetlock.zip"
    clients             = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups              = { default = 1, "*" = 2 }
    settle              = { anything = "5m", "*" = "1m" }
    lease               = { "*" = "2h" }
    maintenance_windows = { "*" = [{ days = ["Sat"], start_time = "01:00", length_minutes = 60 }] }
    alarm_pauses        = { "api-5xx" = ["never-listed"] }
  }
}

run "good_a_zone_in_another_case" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    time_zone       = "america/new_york"
  }
}

run "bad_settle_names_a_typo" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1, workers = 3 }
    settle          = { wrokers = "10m" }
  }
  expect_failures = [aws_lambda_function.this]
}

run "bad_windows_name_a_typo" {
  command = plan
  variables {
    lambda_zip_path     = "tests/fleetlock.zip"
    clients             = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups              = { default = 1, workers = 3 }
    maintenance_windows = { wrokers = [{ days = ["Sat"], start_time = "22:00", length_minutes = 60 }] }
  }
  expect_failures = [aws_lambda_function.this]
}

run "bad_drain_of_a_group_not_configured" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    slot_events     = true
    drain           = { workers = "15m" }
  }
  expect_failures = [aws_lambda_function.this]
}

run "bad_return_gate_of_a_group_not_configured" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1, workers = 2 }
    slot_events     = true
    return_gate     = { wrokers = "20m" }
  }
  expect_failures = [aws_lambda_function.this]
}

run "good_zones_of_a_configured_group" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:workers.us-east-1a:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { workers = 3 }
    zones           = ["workers"]
  }
}

run "bad_zones_of_a_group_only_the_wildcard_covers" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { workers = 3, "*" = 1 }
    zones           = ["batch"]
  }
  expect_failures = [aws_lambda_function.this]
}

run "bad_a_group_with_slots_under_a_split_group" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { workers = 3, "workers.us-east-1a" = 1 }
    zones           = ["workers"]
  }
  expect_failures = [aws_lambda_function.this]
}

run "good_a_canary_then_waves" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:workers:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { workers = 3 }
    canary          = { workers = "30m:1+3:2h" }
  }
}

run "bad_a_canary_of_an_unconfigured_group" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:workers:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { workers = 3 }
    canary          = { wrokers = "30m" }
  }
  expect_failures = [aws_lambda_function.this]
}

run "bad_a_canary_whose_first_wave_is_not_one_node" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:workers:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { workers = 3 }
    canary          = { workers = "30m:3" }
  }
  expect_failures = [var.canary]
}

run "bad_return_timeout_under_a_minute" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    slot_events     = true
    return_gate     = { default = "30s" }
  }
  expect_failures = [var.return_gate]
}

run "bad_lease_of_a_group_not_configured" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1 }
    lease           = { db = "6h" }
  }
  expect_failures = [aws_lambda_function.this]
}

run "bad_alarm_pause_names_a_typo" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1, workers = 3 }
    alarm_pauses    = { "api-5xx" = ["wrokers"] }
  }
  expect_failures = [aws_lambda_function.this]
}

# Found by this corpus: the module took "*" beside a name, which the
# function refuses at start.
run "bad_alarm_pause_mixes_star_with_names" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1, workers = 3 }
    alarm_pauses    = { "api-5xx" = ["workers", "*"] }
  }
  expect_failures = [var.alarm_pauses]
}

run "bad_a_wildcard_value_without_a_wildcard_group" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1 }
    settle          = { "*" = "1m" }
  }
  expect_failures = [aws_lambda_function.this]
}

run "bad_settle_longer_than_a_day" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1, workers = 3 }
    settle          = { workers = "25h" }
  }
  expect_failures = [var.settle]
}

run "bad_lease_shorter_than_half_an_hour" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    lease           = { default = "10m" }
  }
  expect_failures = [var.lease]
}

run "bad_drain_timeout_past_a_day" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    slot_events     = true
    drain           = { default = "25h" }
  }
  expect_failures = [var.drain]
}

run "bad_time_zone_typo" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    time_zone       = "Europe/Berlln"
  }
  expect_failures = [aws_lambda_function.this]
}

run "bad_day_name" {
  command = plan
  variables {
    lambda_zip_path     = "tests/fleetlock.zip"
    clients             = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    maintenance_windows = { default = [{ days = ["Caturday"], start_time = "22:00", length_minutes = 60 }] }
  }
  expect_failures = [var.maintenance_windows]
}

run "bad_window_longer_than_a_week" {
  command = plan
  variables {
    lambda_zip_path     = "tests/fleetlock.zip"
    clients             = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    maintenance_windows = { default = [{ days = ["Sat"], start_time = "22:00", length_minutes = 10081 }] }
  }
  expect_failures = [var.maintenance_windows]
}

run "bad_start_time_without_its_leading_zero" {
  command = plan
  variables {
    lambda_zip_path     = "tests/fleetlock.zip"
    clients             = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    maintenance_windows = { default = [{ days = ["Sat"], start_time = "9:30", length_minutes = 60 }] }
  }
  expect_failures = [var.maintenance_windows]
}

run "bad_slots_past_the_most_a_group_holds" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 501 }
  }
  expect_failures = [var.groups]
}

run "a_drain_gate_in_a_replica_region" {
  command = plan
  variables {
    lambda_zip_path     = "tests/fleetlock.zip"
    clients             = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    existing_table_name = "fleetlock-locks"
    drain               = { default = "15m" }
  }
}

run "bad_slot_events_in_a_replica_region" {
  command = plan
  variables {
    lambda_zip_path     = "tests/fleetlock.zip"
    clients             = ["fleet:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    existing_table_name = "fleetlock-locks"
    slot_events         = true
  }
  expect_failures = [aws_lambda_function.slot_events]
}

run "bad_a_credentials_group_one_typo_from_a_configured_one" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:default,wrokers:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1, workers = 3 }
  }
  expect_failures = [aws_lambda_function.this]
}

run "bad_a_configured_group_one_typo_from_a_credentials_one" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:default,workers:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1, wrokers = 3, fleetlock-check = 2 }
  }
  expect_failures = [aws_lambda_function.this]
}

run "bad_a_credentials_group_in_another_case_beside_a_wildcard" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:default,Workers:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1, workers = 3, "*" = 1 }
  }
  expect_failures = [aws_lambda_function.this]
}

run "bad_a_wildcard_serves_the_typo_but_the_configured_group_is_unreached" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:default,wrokers:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
    groups          = { default = 1, workers = 3, "*" = 1 }
  }
  expect_failures = [aws_lambda_function.this]
}

run "good_names_far_apart_are_only_warned_of" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients = [
      "fleet:default,frontend:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000",
      "ops:*:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000",
    ]
    groups = { default = 1, db = 1, "*" = 1 }
  }
}

run "good_groups_and_credentials_agree" {
  command = plan
  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients = [
      "fleet:default,workers:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000",
      "check:fleetlock-check:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000",
    ]
    groups = { default = 1, workers = 3, fleetlock-check = 2 }
  }
}
