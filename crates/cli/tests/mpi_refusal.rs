//! A binary built without the MPI backend, started by mpirun as one of several ranks, would run
//! N independent copies writing one output: it must refuse, in every subcommand, before doing
//! anything (issue 12). mpirun's environment is imitated (OpenMPI's and PMI's rank counts), so
//! the test needs no MPI installation.
#![cfg(not(feature = "mpi"))]

use std::process::Command;

fn sluice(env: (&str, &str), args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env_remove("OMPI_COMM_WORLD_SIZE")
        .env_remove("PMI_SIZE")
        .env(env.0, env.1)
        .output()
        .expect("run sluice")
}

#[test]
fn several_ranks_without_mpi_are_refused_in_every_subcommand() {
    for var in ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"] {
        for args in
            [&["stats", "--help"][..], &["graph", "info", "/nonexistent"], &["bsp", "bench"]]
        {
            let out = sluice((var, "2"), args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{var} {args:?}: {err}");
            assert!(err.contains("built without MPI"), "{var} {args:?}: {err}");
            assert!(out.stdout.is_empty(), "{var} {args:?}: wrote to stdout");
        }
    }
    // One rank (mpirun -np 1) is a plain run.
    let out = sluice(("OMPI_COMM_WORLD_SIZE", "1"), &["stats", "--help"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
