//! The MPI backend inside real MPI jobs: each `#[test]` here launches `mpirun` on this test
//! binary, whose `#[ignore]`d `job_*` functions then run as the ranks (they do nothing unless
//! `SLUICE_MPI_JOB` is set). Skips, saying why, when `mpirun` is absent or when already inside
//! an MPI job (`scripts/mpi-test` runs every test binary under mpirun).

#![cfg(feature = "mpi")]

use std::process::Command;
use std::time::{Duration, Instant};

use sluice_bsp::mpi::rsmpi::topology::{Color, SimpleCommunicator};
use sluice_bsp::mpi::rsmpi::traits::Communicator;
use sluice_bsp::{Args, Error, exec};

/// Runs job `name` on `np` ranks; `None` (after saying why) when no job can be launched.
fn launch(name: &str, np: usize) -> Option<(Option<i32>, String, Duration)> {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() {
        eprintln!("skipped: already inside an MPI job");
        return None;
    }
    if Command::new("mpirun").arg("--version").output().is_err() {
        eprintln!("skipped: mpirun not found (apt-get install libopenmpi-dev openmpi-bin)");
        return None;
    }
    let exe = std::env::current_exe().unwrap();
    let start = Instant::now();
    let out = Command::new("timeout")
        .args(["60", "mpirun", "--oversubscribe", "-np", &np.to_string()])
        .arg(exe)
        .args(["--exact", name, "--include-ignored", "--test-threads=1", "--nocapture"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("SLUICE_BSP_ENGINE", "mpi")
        .env("SLUICE_MPI_JOB", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    Some((out.status.code(), text, start.elapsed()))
}

fn in_job() -> bool {
    std::env::var_os("SLUICE_MPI_JOB").is_some()
}

#[test]
fn sigkilled_rank_ends_the_job_within_10s_naming_it() {
    let Some((code, text, took)) = launch("job_rank_1_is_killed_mid_superstep", 3) else { return };
    assert_ne!(code, Some(0), "{text}");
    assert!(took < Duration::from_secs(10), "took {took:?}\n{text}");
    assert!(text.contains("rank 1") && text.contains("signal 9"), "{text}");
    assert!(!text.contains("survived"), "{text}");
}

#[ignore = "a rank of an MPI job launched by sigkilled_rank_ends_the_job_within_10s_naming_it"]
#[test]
fn job_rank_1_is_killed_mid_superstep() {
    if !in_job() {
        return;
    }
    let _ = exec(
        3,
        |ctx, s, p, _| {
            ctx.resize_memory_register(1).unwrap();
            ctx.resize_message_queue(2).unwrap();
            ctx.sync().unwrap();
            let x = ctx.alloc_global(8).unwrap();
            for step in 0..1_000_000u64 {
                ctx.put(x, 0, (s + 1) % p, x, 0, 8).unwrap();
                if s == 1 && step == 3 {
                    // SAFETY: raising a signal on our own process has no memory effects.
                    unsafe { libc::raise(libc::SIGKILL) };
                }
                if ctx.sync().is_err() {
                    break;
                }
            }
        },
        Args::none(),
    );
    println!("survived: a peer of a killed rank returned instead of being ended by mpirun");
}

#[test]
fn panicking_rank_fails_every_rank_naming_it() {
    let Some((code, text, took)) = launch("job_rank_2_panics", 4) else { return };
    assert_ne!(code, Some(0), "{text}");
    assert!(took < Duration::from_secs(10), "took {took:?}\n{text}");
    for r in 0..4 {
        let line = format!("rank {r}: process 2 panicked: boom");
        assert!(text.contains(&line), "missing {line:?} in\n{text}");
    }
}

#[ignore = "a rank of an MPI job launched by panicking_rank_fails_every_rank_naming_it"]
#[test]
fn job_rank_2_panics() {
    if !in_job() {
        return;
    }
    let (rank, _) = sluice_bsp::mpi::world_rank_size();
    let result = exec(
        4,
        |ctx, s, _, _| {
            ctx.sync().unwrap();
            if s == 2 {
                panic!("boom");
            }
            let r = ctx.sync();
            assert!(matches!(r, Err(Error::PeerFailed)), "{r:?}");
        },
        Args::none(),
    );
    let err = result.unwrap_err();
    assert!(matches!(err, Error::Panicked { pid: 2, .. }), "{err:?}");
    println!("rank {rank}: {err}");
    std::process::exit(3);
}

#[test]
fn hook_runs_on_sub_communicators_of_a_job() {
    let Some((code, text, _)) = launch("job_hook_on_split_communicators", 4) else { return };
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(text.matches("hook ok").count(), 4, "{text}");
}

#[ignore = "a rank of an MPI job launched by hook_runs_on_sub_communicators_of_a_job"]
#[test]
fn job_hook_on_split_communicators() {
    if !in_job() {
        return;
    }
    let (rank, size) = sluice_bsp::mpi::world_rank_size();
    let world = SimpleCommunicator::world();
    // Two sub-communicators: even and odd world ranks; each runs its own BSP section.
    let sub = world.split_by_color(Color::with_value((rank % 2) as i32)).unwrap();
    let members: Vec<u64> = (0..size as u64).filter(|r| r % 2 == rank as u64 % 2).collect();
    let input = (rank as u64).to_le_bytes();
    let mut output = vec![0u8; 8 * members.len()];
    let args = Args { input: &input, output: &mut output, symbols: &[] };
    sluice_bsp::mpi::hook(
        &sub,
        |ctx, s, p, args| {
            assert_eq!(p as usize, members.len());
            ctx.resize_memory_register(2).unwrap();
            ctx.resize_message_queue(2 * p as usize).unwrap();
            ctx.sync().unwrap();
            let mine = ctx.alloc_local(8).unwrap();
            let all = ctx.alloc_global(8 * p as usize).unwrap();
            ctx.slot_mut(mine).unwrap().copy_from_slice(args.input);
            for d in 0..p {
                ctx.put(mine, 0, d, all, 8 * s as usize, 8).unwrap();
            }
            ctx.sync().unwrap();
            args.output.copy_from_slice(ctx.slot(all).unwrap());
        },
        args,
    )
    .unwrap();
    let got: Vec<u64> =
        output.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(got, members, "world ranks gathered in the sub-communicator");
    println!("hook ok on rank {rank}");
}
