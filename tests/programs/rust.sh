#!/usr/bin/env bash
# A Rust program: Rust's standard library allocates through the C API
# (malloc, realloc, free; posix_memalign for alignments above 16, and a
# fresh block plus a copy when such a block grows). Four threads send owned
# buffers down a channel to a fifth, which frees them; strings and vectors
# grow by realloc; over-aligned blocks (32 B to 64 KiB) are allocated,
# grown and freed, their alignment and contents checked. The program is
# built once, then run with and without mallard.
source "$(dirname "$0")/common.sh"
need rustc

cat >"$WORK/program.rs" <<'RS'
use std::alloc::{alloc, dealloc, realloc, Layout};
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::thread;

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf29ce484222325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3))
}

#[repr(align(4096))]
struct Page([u8; 4096]);

fn main() {
    let (sender, receiver) = mpsc::channel::<Vec<u8>>();
    let producers: Vec<_> = (0..4u64)
        .map(|t| {
            let sender = sender.clone();
            thread::spawn(move || {
                let mut bytes = 0u64;
                for i in 0..20000u64 {
                    let size = 1 + ((i * 7919 + t * 104729) % 5000) as usize;
                    let buffer: Vec<u8> = (0..size).map(|j| (i as usize + j) as u8).collect();
                    bytes += buffer.len() as u64;
                    sender.send(buffer).unwrap();
                }
                bytes
            })
        })
        .collect();
    drop(sender);
    let consumer = thread::spawn(move || {
        let (mut sum, mut count) = (0u64, 0u64);
        for buffer in receiver {
            sum = sum.wrapping_add(fnv(&buffer));
            count += 1;
        }
        (sum, count)
    });
    let bytes: u64 = producers.into_iter().map(|p| p.join().unwrap()).sum();
    let (sum, count) = consumer.join().unwrap();
    println!("channel: {} buffers, {} bytes, checksum {:x}", count, bytes, sum);

    let mut index: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut text = String::new();
    for i in 0..200000u64 {
        index.entry(format!("key{}", i % 4999)).or_insert_with(Vec::new).push(i);
        if i % 7 == 0 {
            text.push_str(&i.to_string());
        }
    }
    index.retain(|key, _| key.len() % 2 == 0);
    let longest = index.values().map(|v| v.len()).max().unwrap_or(0);
    println!("map: {} keys, longest {}, text {} bytes, checksum {:x}", index.len(), longest, text.len(), fnv(text.as_bytes()));

    let pages: Vec<Box<Page>> = (0..64).map(|i| Box::new(Page([i as u8; 4096]))).collect();
    for page in &pages {
        assert_eq!(&page.0 as *const u8 as usize % 4096, 0, "a Box<Page> is not 4096-aligned");
    }
    println!("pages: {} of 4096 bytes, sum {}", pages.len(), pages.iter().map(|p| u64::from(p.0[4095])).sum::<u64>());

    let mut checked = 0;
    for &align in &[32usize, 64, 256, 4096, 65536] {
        for &size in &[1usize, 24, 100, 5000, 300000] {
            unsafe {
                let layout = Layout::from_size_align(size, align).unwrap();
                let block = alloc(layout);
                assert!(!block.is_null() && block as usize % align == 0, "alloc({}, {}) misaligned", size, align);
                std::ptr::write_bytes(block, 0xab, size);
                let grown = realloc(block, layout, size * 3);
                assert!(!grown.is_null() && grown as usize % align == 0, "realloc({}, {}) misaligned", size, align);
                for k in 0..size {
                    assert_eq!(*grown.add(k), 0xab, "realloc lost byte {} of {}", k, size);
                }
                dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                checked += 1;
            }
        }
    }
    println!("aligned: {} blocks checked", checked);
}
RS
rustc --edition 2021 -O -o "$WORK/program" "$WORK/program.rs" || fail "rustc could not build the test program"
compare_runs rust 1048576 "$WORK/program"
