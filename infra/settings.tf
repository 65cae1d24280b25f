# What the function would refuse at start, refused at plan time instead.
#
# The function's parser (src/config.rs) is the source of truth; each
# variable's validation checks what it can alone (shapes, ranges, day
# names), and the cross-variable rules below are preconditions of the API
# function (main.tf), since Terraform 1.5 validations cannot read another
# variable. tests/iac/terraform/agreement.tftest.hcl plans a corpus of inputs
# that `fleetlock config check` reads too, and both must give each the same
# verdict (tests/iac/plan_terraform.py).

locals {
  configured_groups = keys(var.groups)
  wildcard_groups   = contains(local.configured_groups, "*")

  # Every group a per-group input names, by input. A group is accepted when
  # `groups` lists it or has a "*"; a "*" key only when `groups` has one.
  # Alarm pauses may always name "*" (every group).
  per_group_keys = {
    settle              = keys(var.settle)
    lease               = keys(var.lease)
    drain               = keys(var.drain)
    return_gate         = keys(var.return_gate)
    canary              = keys(var.canary)
    maintenance_windows = keys(var.maintenance_windows)
    alarm_pauses        = [for group in distinct(flatten(values(var.alarm_pauses))) : group if group != "*"]
  }
  unconfigured_groups = {
    for input, groups in local.per_group_keys : input => [
      for group in groups : group
      if !contains(local.configured_groups, group) && (group == "*" || !local.wildcard_groups)
    ]
  }
  unconfigured_refusals = flatten([
    for input, groups in local.unconfigured_groups : [
      for group in groups : group == "*" ? "${input} gives \"*\" a value but groups has no \"*\"" : "${input} names group '${group}', which groups does not configure${
        length(local.closest_group[group]) > 0 ? " (did you mean '${local.closest_group[group][0]}'?)" : ""
      }"
    ]
  ])
  # A configured group one typo from a mistyped one: the same length and
  # one letter changed or two letters swapped, or one letter more or less. Terraform has no edit distance; this catches the common typos, and
  # the configured groups are listed with every refusal anyway.
  closest_group = {
    for group in distinct(flatten(values(local.unconfigured_groups))) : group => [
      for known in local.configured_groups : known
      if known != "*" && known != group && (
        (length(known) == length(group) && (
          length([for i in range(length(group)) : i if substr(group, i, 1) != substr(known, i, 1)]) == 1 ||
          (join("", sort(split("", group))) == join("", sort(split("", known))) &&
          length([for i in range(length(group)) : i if substr(group, i, 1) != substr(known, i, 1)]) == 2)
        )) ||
        (length(known) == length(group) + 1 && anytrue([for i in range(length(known)) : "${substr(known, 0, i)}${substr(known, i + 1, -1)}" == group])) ||
        (length(group) == length(known) + 1 && anytrue([for i in range(length(group)) : "${substr(group, 0, i)}${substr(group, i + 1, -1)}" == known]))
      )
    ]
  }

  # FLEETLOCK_ZONES (src/domain/groups.rs, with_zones): each group split by
  # zone named with its slots in groups, and no group of groups under one.
  zone_refusals = concat(
    [for group in var.zones : "zones names group '${group}', which groups does not name with its slots" if !contains(local.configured_groups, group)],
    [for pair in setproduct(var.zones, local.configured_groups) : "group '${pair[1]}' is under '${pair[0]}', which is split by zone: groups may not give it slots of its own" if startswith(pair[1], "${pair[0]}.")],
  )

  # The groups read against the credentials (src/domain/coverage.rs): a
  # credential's group one typo from a configured one that nothing serves,
  # or a configured group no credential reaches, one typo from a
  # credential's. Names further apart are only warned of by `fleetlock
  # config check`: they may be meant.
  # Names and groups only: the entries are sensitive for their salted
  # hashes, which none of this reads.
  credential_groups = nonsensitive(flatten([
    for entry in var.clients : [
      for group in split(",", split(":", entry)[1]) : { client = split(":", entry)[0], group = trimspace(group) }
    ] if length(split(":", entry)) == 4 && split(":", entry)[1] != "*"
  ]))
  credentials_reach_all = nonsensitive(anytrue([for entry in var.clients : length(split(":", entry)) == 4 && split(":", entry)[1] == "*"]))
  # Every pair of a credential's group and another configured group, and
  # whether the two are one typo apart: one letter changed, two swapped, one
  # more or less, or only the case.
  credential_pairs = flatten([
    for c in local.credential_groups : [
      for known in local.configured_groups : {
        client = c.client
        group  = c.group
        known  = known
        typo = (
          lower(known) == lower(c.group) ||
          (length(known) == length(c.group) && (
            length([for i in range(length(c.group)) : i if substr(c.group, i, 1) != substr(known, i, 1)]) == 1 ||
            (join("", sort(split("", c.group))) == join("", sort(split("", known))) &&
            length([for i in range(length(c.group)) : i if substr(c.group, i, 1) != substr(known, i, 1)]) == 2)
          )) ||
          (length(known) == length(c.group) + 1 && anytrue([for i in range(length(known)) : "${substr(known, 0, i)}${substr(known, i + 1, -1)}" == c.group])) ||
          (length(c.group) == length(known) + 1 && anytrue([for i in range(length(c.group)) : "${substr(c.group, 0, i)}${substr(c.group, i + 1, -1)}" == known]))
        )
      } if known != "*" && known != c.group
    ]
  ])
  # A credential's group is served when groups lists it, or has a "*" and
  # lists no group differing from it only in case.
  credential_unserved = [
    for c in local.credential_groups : c
    if !contains(local.configured_groups, c.group) && (!local.wildcard_groups || anytrue([for known in local.configured_groups : known != "*" && lower(known) == lower(c.group)]))
    # A zone's group (workers.us-east-1a) is served by its split group.
    && !anytrue([for zoned in var.zones : startswith(c.group, "${zoned}.")])
  ]
  credential_typos = distinct(concat(
    [
      for p in local.credential_pairs : "credential '${p.client}' (clients) names group '${p.group}', which groups does not configure (did you mean '${p.known}'?)"
      if p.typo && contains([for c in local.credential_unserved : "${c.client}:${c.group}"], "${p.client}:${p.group}")
    ],
    local.credentials_reach_all ? [] : [
      for p in local.credential_pairs : "group '${p.known}' (groups) is reached by no credential of clients (did you mean '${p.group}' of credential '${p.client}'?)"
      if p.typo && !contains([for c in local.credential_groups : c.group], p.known) && !contains([for c in local.credential_unserved : "${c.client}:${c.group}"], "${p.client}:${p.group}")
    ]
  ))

  # The binary's bundled time zone database (time_zones.tf), in any case as
  # the function reads a name.
  time_zone_known = contains([for zone in local.time_zones : lower(zone)], lower(trimspace(var.time_zone)))
  # A known zone one letter off the one given (the common typo), if any.
  closest_time_zone = [
    for zone in local.time_zones : zone
    if !local.time_zone_known && length(zone) == length(var.time_zone) &&
    length([for i in range(length(zone)) : i if lower(substr(zone, i, 1)) != lower(substr(var.time_zone, i, 1))]) == 1
  ]
}
