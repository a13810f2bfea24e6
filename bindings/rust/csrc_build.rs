//! libncclshim compiled from its C sources by the build script itself: no meson, no pkg-config,
//! no `cc` crate. The sources are the ones `csrc/` carries (symbolic links into the checkout;
//! real files in a packaged crate), and the list of them is read from their own `meson.build`
//! files, so that a file added there is compiled here too. Used by build.rs, and by
//! tests/ffi_drift.rs for the meson reader.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The C sources of libncclshim (its `src/` tree up to the library, and the loader it links
/// whole), read from the `meson.build` files under `root`; an error names what is missing.
pub fn library_sources(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut lists = HashMap::new();
    // The loader first: src/meson.build links it whole (`link_whole : loader_lib`).
    read_lists(&root.join("loader"), &mut lists, None)?;
    read_lists(&root.join("src"), &mut lists, Some("ncclshim_lib"))?;
    let mut sources = Vec::new();
    for list in ["ncclshim_sources", "loader_sources"] {
        let files = lists
            .remove(list)
            .ok_or_else(|| format!("no `{list}` in {}'s meson.build files", root.display()))?;
        sources.extend(files);
    }
    if let Some(missing) = sources.iter().find(|s| !s.exists()) {
        return Err(format!(
            "{} is listed in meson.build but absent: when it is a new folder of src/, add it \
             to `include` in bindings/rust/Cargo.toml",
            missing.display()
        ));
    }
    Ok(sources)
}

/// The project's version, from `project(..., version : 'X')` in `root/meson.build`.
pub fn project_version(root: &Path) -> Result<String, String> {
    let path = root.join("meson.build");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let statement = statements(&text)
        .into_iter()
        .find(|s| s.starts_with("project("))
        .ok_or_else(|| format!("no project() in {}", path.display()))?;
    let after = statement
        .split_once("version")
        .and_then(|(_, rest)| rest.trim_start().strip_prefix(':'))
        .ok_or_else(|| format!("no version in {}'s project()", path.display()))?;
    quoted(after)
        .into_iter()
        .next()
        .ok_or_else(|| format!("no version string in {}'s project()", path.display()))
}

/// Reads `dir/meson.build`: each `NAME = ...` or `NAME += ...` whose terms are `files(...)` or
/// lists already read, into `lists`, following `subdir('x')` into `dir/x`; stops at the
/// statement that assigns `stop` (the library itself: what comes after is not part of it).
fn read_lists(
    dir: &Path,
    lists: &mut HashMap<String, Vec<PathBuf>>,
    stop: Option<&str>,
) -> Result<(), String> {
    let path = dir.join("meson.build");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    for statement in statements(&text) {
        if let Some(sub) = statement.strip_prefix("subdir(") {
            let name = quoted(sub).into_iter().next().unwrap_or_default();
            read_lists(&dir.join(name), lists, None)?;
            continue;
        }
        let (name, add, expr) = match statement.split_once("+=") {
            Some((name, expr)) => (name, true, expr),
            None => match statement.split_once('=') {
                Some((name, expr)) if !expr.starts_with('=') => (name, false, expr),
                _ => continue,
            },
        };
        let name = name.trim();
        if Some(name) == stop {
            return Ok(());
        }
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let Some(value) = list_value(expr, dir, lists) else {
            continue;
        };
        let entry = lists.entry(name.to_string()).or_default();
        if !add {
            entry.clear();
        }
        entry.extend(value);
    }
    Ok(())
}

/// `files('a.c', 'b.c') + other_list`: the files (relative to `dir`), None when a term is
/// anything else.
fn list_value(
    expr: &str,
    dir: &Path,
    lists: &HashMap<String, Vec<PathBuf>>,
) -> Option<Vec<PathBuf>> {
    let mut out = Vec::new();
    for term in split_top(expr, '+') {
        let term = term.trim();
        if let Some(args) = term.strip_prefix("files(") {
            out.extend(quoted(args).into_iter().map(|f| dir.join(f)));
        } else {
            out.extend(lists.get(term)?.iter().cloned());
        }
    }
    Some(out)
}

/// Meson statements: comments dropped, lines joined inside brackets, trimmed, one per entry.
pub fn statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let (mut depth, mut in_string) = (0i32, false);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => in_string = !in_string,
            '#' if !in_string => {
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        break;
                    }
                }
                if depth == 0 {
                    out.push(std::mem::take(&mut current));
                } else {
                    current.push(' ');
                }
                continue;
            }
            '(' | '[' | '{' if !in_string => depth += 1,
            ')' | ']' | '}' if !in_string => depth -= 1,
            '\n' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            '\n' => {
                current.push(' ');
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `text` split at `sep` outside brackets and strings.
fn split_top(text: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut in_string, mut start) = (0i32, false, 0);
    for (i, c) in text.char_indices() {
        match c {
            '\'' => in_string = !in_string,
            '(' | '[' if !in_string => depth += 1,
            ')' | ']' if !in_string => depth -= 1,
            c if c == sep && depth == 0 && !in_string => {
                out.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// The single-quoted strings of `text` up to its first unbalanced `)`.
fn quoted(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut rest = text;
    while let Some(i) = rest.find(['\'', '(', ')']) {
        match rest.as_bytes()[i] {
            b'(' => depth += 1,
            b')' if depth == 0 => break,
            b')' => depth -= 1,
            _ => {
                let after = &rest[i + 1..];
                let Some(end) = after.find('\'') else { break };
                out.push(after[..end].to_string());
                rest = &after[end + 1..];
                continue;
            }
        }
        rest = &rest[i + 1..];
    }
    out
}
