//! The tools the tests drive (tests/tools.txt) are installed: a missing one fails here with
//! what to install, instead of as a puzzling failure in some mount test.

#[test]
fn every_tool_the_tests_drive_is_installed() {
    let list = include_str!("tools.txt");
    let mut missing = Vec::new();
    for line in list.lines() {
        let mut f = line.split_whitespace();
        let (Some(tool), Some(pkg)) = (f.next(), f.next()) else {
            continue;
        };
        if tool.starts_with('#') {
            continue;
        }
        let ok = match tool.strip_prefix("python:") {
            Some(module) => std::process::Command::new("python3")
                .args(["-c", &format!("import {module}")])
                .output()
                .is_ok_and(|o| o.status.success()),
            None => std::process::Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .is_ok_and(|o| o.status.success()),
        };
        if !ok {
            missing.push(match tool.strip_prefix("python:") {
                Some(m) => format!("python module {m} (python3 -m pip install {pkg})"),
                None => format!("{tool} (apt-get install -y {pkg})"),
            });
        }
    }
    assert!(
        missing.is_empty(),
        "missing test tools — run scripts/test (it installs them) or install: {}",
        missing.join(", ")
    );
}
