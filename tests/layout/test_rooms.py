#!/usr/bin/env python3
"""The rooms check (tests/layout/rooms.py), on src/ and on broken stand-ins
it must fail: a long file, a glob import, a circle, a long src/cli."""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOMS = HERE / "rooms.py"
SRC = HERE.parents[1] / "src"
# Every rule issue 65 names for the rooms.
HELD = "size,glob,circle,cli,style,string"


def run(src, rules):
    return subprocess.run([sys.executable, str(ROOMS), "--check", rules, str(src)],
                          capture_output=True, text=True)


class StandIn:
    """A small src/ tree that holds every rule, changed by one test."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.src = Path(self.dir.name) / "src"
        self.write("lib.rs", "pub mod domain;\npub mod cli;\n")
        self.write("domain.rs", "pub mod error;\npub mod input;\n")
        self.write("domain/error.rs", "pub struct Error;\n")
        self.write("domain/input.rs", "use crate::domain::error::Error;\npub fn parse() -> Error { Error }\n")
        self.write("cli.rs", "pub fn main() {}\n")

    def write(self, name, text):
        path = self.src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


class RoomsTest(unittest.TestCase):
    def test_src_holds_the_rules_it_has_reached(self):
        result = run(SRC, HELD)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn(" 0 over 500; 0 glob imports; 0 circles in src/domain", result.stdout)
        self.assertNotIn("src/cli:", result.stdout)

    def test_a_stand_in_that_holds_every_rule_passes(self):
        tree = StandIn()
        result = run(tree.src, HELD)
        self.assertEqual(result.returncode, 0, result.stdout)

    def test_a_string_error_is_refused_and_a_string_inside_a_type_is_not(self):
        tree = StandIn()
        tree.write("domain/input.rs", "use std::collections::HashMap;\n"
                   "pub fn names() -> Result<HashMap<String, String>, Error> { todo!() }\n"
                   "pub fn id() -> Result<[u8; 16], Error> { todo!() }\n"
                   "pub fn f() -> Result<Box<dyn Fn() -> String>, Error> { todo!() }\n"
                   "#[cfg(test)]\nmod tests {\n    fn t() -> Result<(), String> { Ok(()) }\n}\n")
        self.assertEqual(run(tree.src, "string").returncode, 0)
        tree.write("domain/error.rs", "pub struct Error;\n"
                   "pub fn id() -> Result<[u8; 16], String> { todo!() }\n")
        result = run(tree.src, "string")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("src/domain/error.rs: a Result<_, String> near line 2", result.stdout)
        self.assertIn("1 `Result<_, String>`", result.stdout)

    def test_a_long_file_is_refused_and_its_test_module_does_not_count(self):
        tree = StandIn()
        tests = "#[cfg(test)]\nmod tests {\n" + "    fn t() {}\n" * 600 + "}\n"
        tree.write("domain/error.rs", "pub struct Error;\n" + tests)
        tree.write("domain/tests.rs", "fn t() {}\n" * 600)
        self.assertEqual(run(tree.src, "size").returncode, 0)
        tree.write("domain/error.rs", "pub struct Error;\n" + "// a line\n" * 500 + tests)
        result = run(tree.src, "size")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("broken: src/domain/error.rs: 501 non-test lines, over 500", result.stdout)

    def test_a_glob_import_outside_a_test_module_is_refused(self):
        tree = StandIn()
        tree.write("domain/input.rs", "#[cfg(test)]\nmod tests {\n    use super::*;\n}\n")
        self.assertEqual(run(tree.src, "glob").returncode, 0)
        tree.write("domain/input.rs", "use crate::domain::error::*;\n")
        result = run(tree.src, "glob")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("broken: src/domain/input.rs: a glob import: use crate::domain::error::*;", result.stdout)

    def test_a_circle_in_the_domain_is_refused_and_a_comment_is_no_use(self):
        tree = StandIn()
        tree.write("domain/error.rs", "/// Said of [`crate::domain::input`].\npub struct Error;\n")
        self.assertEqual(run(tree.src, "circle").returncode, 0)
        tree.write("domain/error.rs", "use crate::domain::input::parse;\npub struct Error;\n")
        result = run(tree.src, "circle")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("broken: a circle in src/domain: error -> input -> error", result.stdout)

    def test_a_module_declared_for_tests_only_does_not_count(self):
        tree = StandIn()
        tree.write("cli/helpers.rs", "// a line\n" * 501)
        tree.write("cli.rs", "pub fn main() {}\n#[cfg(test)]\nmod helpers;\n")
        self.assertEqual(run(tree.src, "size").returncode, 0)
        tree.write("cli.rs", "pub fn main() {}\nmod helpers;\n")
        result = run(tree.src, "size")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("broken: src/cli/helpers.rs: 501 non-test lines, over 500", result.stdout)

    def test_a_long_cli_is_refused(self):
        tree = StandIn()
        for n in range(10):
            tree.write(f"cli/part{n}.rs", "// a line\n" * 499)
        tree.write("cli/part10.rs", "// a line\n" * 8)
        self.assertEqual(run(tree.src, "cli").returncode, 0)
        tree.write("cli/part10.rs", "// a line\n" * 9)
        result = run(tree.src, "cli")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("broken: src/cli: 5000 non-test lines, not under 5000", result.stdout)

    def test_a_mod_rs_is_refused(self):
        tree = StandIn()
        tree.write("store/mod.rs", "pub mod memory;\n")
        result = run(tree.src, "style")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("broken: src/store/mod.rs: a mod.rs", result.stdout)

    def test_an_unknown_rule_is_refused(self):
        result = run(SRC, "globs")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no rule globs", result.stderr)


if __name__ == "__main__":
    unittest.main()
