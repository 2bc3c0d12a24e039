// How far ahead the AVX-512 kernels that stream one weight row prefetch
// (PREFETCHT0 AHEAD(SI)), shared by the .s files that include this.
//
// On the 2-vCPU Sapphire Rapids VM of session 20, a DRAM-sized stream of
// packed rows (512 MiB) through the VNNI decode kernels ran at 19.2
// (vector 2x16) and 20.9 GB/s (LUT4) with two goroutines 1 KiB ahead and
// at 25.4 / 27.8 GB/s 4 KiB ahead (BenchmarkStreamQ16); 2 KiB was between,
// 6 and 8 KiB the same as 4, PREFETCHT1 and T2 as T0, PREFETCHNTA slower:
// a core's own misses in flight, not the memory, had set the pace.
// docs/KERNELS.md, "Software prefetch".
#define AHEAD 4096
