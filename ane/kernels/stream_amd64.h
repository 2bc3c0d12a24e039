// How far ahead the AVX-512 kernels that stream one weight row prefetch
// (PREFETCHT0 AHEAD(SI)), shared by the .s files that include this.
//
// On the 2-vCPU Sapphire Rapids VM of session 20, a DRAM-sized stream of
// packed rows (512 MiB) through the VNNI decode kernels ran at 19.4
// (vector 2x16) and 15.0–22.1 GB/s (LUT4) with two goroutines 1 KiB ahead,
// 22.3 / 24.5 at 2 KiB and 25–26 / 27–29 at 4, 6 and 8 KiB (PREFETCHT0,
// T1 and T2 alike; PREFETCHNTA slower than none): a core's own misses
// in flight, not the memory, had set the pace. docs/KERNELS.md, "Software
// prefetch".
#define AHEAD 4096
