//! Checks include/vmafcuda.h against the Rust side: every constant's value, every exported
//! function (name and number of parameters), and each struct's size and field offsets as a C
//! compiler lays them out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::types::{layout, CONSTANTS};

const HEADER: &str = include_str!("../include/vmafcuda.h");
const LIB_RS: &str = include_str!("lib.rs");

/// `name -> value` of every `VMAFCUDA_*` constant the header defines (enum entries, #defines).
fn header_constants() -> BTreeMap<String, i32> {
    let mut out = BTreeMap::new();
    for line in HEADER.lines().map(str::trim) {
        let line = line.trim_end_matches(',');
        let (name, value) = if let Some(rest) = line.strip_prefix("#define ") {
            match rest.split_once(' ') {
                Some((n, v)) => (n.trim(), v.trim()),
                None => continue,
            }
        } else if let Some((n, v)) = line.split_once(" = ") {
            (n.trim(), v.trim())
        } else {
            continue;
        };
        if name.starts_with("VMAFCUDA_") && name != "VMAFCUDA_H" {
            let v: i32 = value
                .parse()
                .unwrap_or_else(|_| panic!("header: {name} = {value:?} is not a number"));
            out.insert(name.to_owned(), v);
        }
    }
    out
}

/// Parameter count of a C parameter list or a Rust one (`void` = 0).
fn arity(params: &str) -> usize {
    let p = params.trim();
    if p.is_empty() || p == "void" {
        0
    } else {
        p.split(',').filter(|s| !s.trim().is_empty()).count()
    }
}

/// `name -> arity` of the functions declared in the header.
fn header_functions() -> BTreeMap<String, usize> {
    // Join lines so that multi-line prototypes read as one; drop comments first.
    let mut code = String::new();
    let mut rest = HEADER;
    while let Some(start) = rest.find("/*") {
        code.push_str(&rest[..start]);
        rest = &rest[start + 2..];
        rest = &rest[rest.find("*/").map_or(rest.len(), |e| e + 2)..];
    }
    code.push_str(rest);
    let mut out = BTreeMap::new();
    for decl in code.split(';') {
        let decl = decl.replace('\n', " ");
        let Some(open) = decl.find('(') else { continue };
        let head = &decl[..open];
        let Some(name) = head.split_whitespace().last() else {
            continue;
        };
        let name = name.trim_start_matches('*');
        if !name.starts_with("vmafcuda_") || decl.contains("#define") {
            continue;
        }
        let close = decl.rfind(')').expect("prototype without ')'");
        out.insert(name.to_owned(), arity(&decl[open + 1..close]));
    }
    out
}

/// `name -> arity` of the `extern "C"` functions of lib.rs.
fn rust_functions() -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let mut rest = LIB_RS;
    while let Some(at) = rest.find("extern \"C\" fn ") {
        rest = &rest[at + "extern \"C\" fn ".len()..];
        let open = rest.find('(').expect("fn without '('");
        let name = rest[..open].trim().to_owned();
        let close = rest.find(')').expect("fn without ')'");
        out.insert(name, arity(&rest[open + 1..close]));
    }
    out
}

#[test]
fn header_constants_match_rust() {
    let header = header_constants();
    let rust: BTreeMap<String, i32> = CONSTANTS
        .iter()
        .map(|(n, v)| ((*n).to_owned(), *v))
        .collect();
    assert_eq!(header, rust);
}

#[test]
fn header_functions_match_exports() {
    let header = header_functions();
    assert!(header.len() >= 19, "parsed only {header:?}");
    assert_eq!(header, rust_functions());
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

#[test]
fn header_struct_layout_matches_rust() {
    let rust = layout();
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include \"vmafcuda.h\"\nint main(void) {\n",
    );
    for (key, _) in &rust {
        let (ty, field) = key.split_once('.').expect("Struct.field");
        if field == "sizeof" {
            c.push_str(&format!("printf(\"{key} %zu\\n\", sizeof({ty}));\n"));
        } else {
            c.push_str(&format!(
                "printf(\"{key} %zu\\n\", offsetof({ty}, {field}));\n"
            ));
        }
    }
    c.push_str("return 0;\n}\n");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let tmp = std::env::temp_dir().join(format!("vmafcuda-abi-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let src = tmp.join("abi.c");
    let exe = tmp.join("abi");
    std::fs::write(&src, c).expect("write abi.c");
    let status = Command::new(cc())
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(dir.join("include"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("run the C compiler (cc)");
    assert!(
        status.success(),
        "abi.c does not compile against the header"
    );
    let out = Command::new(&exe).output().expect("run abi");
    let text = String::from_utf8(out.stdout).expect("utf8");
    let c_layout: Vec<(String, usize)> = text
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').expect("key value");
            (k.to_owned(), v.parse().expect("number"))
        })
        .collect();
    let rust: Vec<(String, usize)> = rust.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    assert_eq!(c_layout, rust);
    let _ = std::fs::remove_dir_all(Path::new(&tmp));
}
