//! README.md's list of the server's commands ("Serve it") is the command table's, grouped as
//! Redis's documentation groups them: every command of the table is listed, in its group,
//! and nothing else is. The block between the markers is generated from the table; when it
//! differs the test fails and prints the block to paste, or writes it itself with
//! `AUGUR_BLESS_README=1 cargo test -p augur-server --test readme_commands`.

use augur_server::commands::{subcommands, Spec, COMMANDS};

const BEGIN: &str = "<!-- BEGIN commands: generated from the command table; \
                     crates/augur-server/tests/readme_commands.rs checks it -->";
const END: &str = "<!-- END commands -->";

/// The expiry commands, which Redis's docs file under "generic" with the key commands.
const EXPIRY: &[&str] = &[
    "expire",
    "pexpire",
    "expireat",
    "pexpireat",
    "ttl",
    "pttl",
    "expiretime",
    "pexpiretime",
    "persist",
];

/// The README's groups, in order, and the table's groups (Redis's) each takes.
const GROUPS: &[(&str, &str)] = &[
    ("Strings", "string"),
    ("Hashes", "hash"),
    ("Keys", "generic"),
    ("Expiry", "generic"),
    ("Transactions", "transactions"),
    ("Pub/Sub", "pubsub"),
    ("Connection", "connection"),
    ("Server", "server"),
];

/// The README group of `spec`.
fn group_of(spec: &Spec) -> &'static str {
    if EXPIRY.contains(&spec.name) {
        return "Expiry";
    }
    GROUPS
        .iter()
        .find(|(readme, table)| *table == spec.group && *readme != "Expiry")
        .map(|(readme, _)| *readme)
        .unwrap_or_else(|| panic!("{}: group {} has no README group", spec.name, spec.group))
}

/// A command as listed: its name, and its subcommands for a container (`CLIENT
/// ID|KILL|…`).
fn listed(spec: &Spec) -> String {
    let subs = subcommands(spec.name);
    let name = spec.name.to_ascii_uppercase();
    if subs.is_empty() {
        format!("`{name}`")
    } else {
        format!("`{name} {}`", subs.join("|").to_ascii_uppercase())
    }
}

/// The block the README must hold between the markers.
fn expected_block() -> String {
    let mut out = format!("{BEGIN}\n");
    for (readme, _) in GROUPS {
        let mut specs: Vec<&Spec> = COMMANDS.iter().filter(|s| group_of(s) == *readme).collect();
        if specs.is_empty() {
            continue;
        }
        specs.sort_by_key(|s| s.name);
        let names: Vec<String> = specs.iter().map(|s| listed(s)).collect();
        out.push_str(&format!("- {readme}: {}\n", names.join(" ")));
    }
    out.push_str(END);
    out
}

#[test]
fn the_readme_lists_exactly_the_command_table() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let want = expected_block();
    let (Some(begin), Some(end)) = (readme.find(BEGIN), readme.find(END)) else {
        panic!("README.md has no command list between the markers; add:\n\n{want}\n");
    };
    let got = &readme[begin..end + END.len()];
    if got == want {
        return;
    }
    if std::env::var_os("AUGUR_BLESS_README").is_some() {
        let updated = format!("{}{want}{}", &readme[..begin], &readme[end + END.len()..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    // Each direction named, then the whole block to paste.
    for spec in COMMANDS {
        assert!(
            got.contains(&format!("`{}", spec.name.to_ascii_uppercase())),
            "README.md does not list {}",
            spec.name
        );
    }
    panic!(
        "README.md's command list differs from the command table (a command it names is \
         not in the table, or one is out of its group or order); the list should read:\n\n\
         {want}\n\n(or run with AUGUR_BLESS_README=1)"
    );
}

/// Every command of the table has a README group and a summary (`COMMAND DOCS`).
#[test]
fn every_command_has_a_group_and_a_summary() {
    for spec in COMMANDS {
        let _ = group_of(spec);
        assert!(!spec.summary.is_empty(), "{}", spec.name);
    }
}
