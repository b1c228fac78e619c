//! `phobos-kbench export --db PATH --kernel FILE[:NAME] -o table.json`: the winners of every
//! problem of one kernel, as a config table a program deploys (see `phobos_tune::deploy`).

use super::args::ExportArgs;
use super::UserError;
use phobos::frontend::{CheckFrontend, LoadError};
use phobos_syntax::SourceFile;
use phobos_tune::deploy::{ConfigTable, TABLE_FORMAT};
use phobos_tune::store::PHOBOS_VERSION;
use phobos_tune::{Frontend, Store};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `FILE:NAME` split at its last colon when `FILE` names a file; the whole text otherwise.
fn split_kernel(spec: &str) -> (PathBuf, Option<&str>) {
    match spec.rsplit_once(':') {
        Some((file, name)) if !name.is_empty() && Path::new(file).is_file() => {
            (PathBuf::from(file), Some(name))
        }
        _ => (PathBuf::from(spec), None),
    }
}

/// The kernel `FILE[:NAME]` names, checked (its diagnostics printed when it has errors).
pub(super) fn load_kernel(spec: &str) -> Result<CheckFrontend, UserError> {
    let (path, name) = split_kernel(spec);
    let file_name = path.display().to_string();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| UserError::new(format!("cannot read {file_name}: {e}")))?;
    let source = SourceFile::new(file_name, text);
    match CheckFrontend::load(source, name) {
        Ok(f) => Ok(f),
        Err(LoadError::Diagnostics(d, f)) => {
            let color = crate::render::stderr_color();
            eprintln!("{}", crate::render::render_all(&d, &f, color));
            Err(UserError::printed())
        }
        Err(LoadError::Kernel(m)) => Err(UserError::new(m)),
    }
}

/// An existing results database, opened.
pub(super) fn open_db(path: &Path) -> Result<Store, UserError> {
    if !path.is_file() {
        return Err(UserError::new(format!(
            "{}: no such results database",
            path.display()
        )));
    }
    Store::open(path).map_err(|e| UserError::new(e.to_string()))
}

pub fn run(args: &ExportArgs) -> Result<ExitCode, UserError> {
    let frontend = load_kernel(&args.kernel)?;
    let store = open_db(&args.db)?;
    let entries = store
        .winners(frontend.kernel_hash(), PHOBOS_VERSION)
        .map_err(|e| UserError::new(e.to_string()))?;
    if entries.is_empty() {
        return Err(UserError::new(format!(
            "{} holds no finished run of `{}` of this source under Phobos {PHOBOS_VERSION}",
            args.db.display(),
            frontend.kernel_name()
        ))
        .hint("tune it first: phobos-kbench FILE --dims ... --db PATH"));
    }
    let table = ConfigTable {
        format: TABLE_FORMAT.into(),
        kernel: frontend.kernel_name().into(),
        kernel_hash: frontend.kernel_hash().into(),
        phobos_version: PHOBOS_VERSION.into(),
        entries,
    };
    table
        .write(&args.output)
        .map_err(|e| UserError::new(e.to_string()))?;
    eprintln!(
        "wrote {} with {} entr{}",
        args.output.display(),
        table.entries.len(),
        if table.entries.len() == 1 { "y" } else { "ies" }
    );
    Ok(ExitCode::SUCCESS)
}
