# An upgrade of a deployment made before global tables: the table it made
# (no count then) is the module's aws_dynamodb_table.locks[0] now, kept, not
# destroyed and made again empty (which would drop every held slot).
#
# The first run applies the old table with a mocked provider, which gives a
# made resource a random ARN; the second plans the module on that state
# (state_key). The ARN is known in that plan only if the plan keeps the
# table at its new address (a table made again has an ARN known after
# apply): a rename without a moved block fails here. A mocked provider plans
# no replacement for an attribute that forces one, so the test compares
# those attributes itself.

mock_provider "aws" {
  source = "./tests/mocks"
}

run "a_table_made_before_global_tables" {
  command   = apply
  state_key = "upgrade"

  module {
    source = "./tests/before-global-tables"
  }
}

run "the_upgrade_keeps_that_table" {
  command   = plan
  state_key = "upgrade"

  variables {
    lambda_zip_path = "tests/fleetlock.zip"
    clients         = ["fleet:default:00112233445566778899aabbccddeeff:0000000000000000000000000000000000000000000000000000000000000000"]
  }

  assert {
    condition     = aws_dynamodb_table.locks[0].arn == run.a_table_made_before_global_tables.table.arn
    error_message = "the upgrade makes a new table instead of keeping the one the deployment had"
  }
  assert {
    condition = alltrue([
      for key in ["name", "hash_key", "range_key", "attribute"] :
      aws_dynamodb_table.locks[0][key] == run.a_table_made_before_global_tables.table[key]
    ])
    error_message = "the upgrade changes an attribute of the table that makes AWS replace it"
  }
}
