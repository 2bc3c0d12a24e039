// Package standin is the Linux stand-in for the Swift Core AI bridge: the
// same cai_* C ABI (version 1, docs/COREAI.md), compute on the CPU. With
// it the Core AI drivers of ane/coreai run a synthetic bundle off a Mac,
// in tests and in the daemon alike. Nothing here runs on the ANE.
//
// The bridge is csrc/bridge.c (embedded). Build compiles it with the
// system C compiler into a shared library (not cgo; Shared does so once
// per process) and Attach loads it with purego and registers this
// package's single compute callback (purego callbacks are never freed, so
// a process has one however often Attach is called). cai.OpenLibrary
// on the same path then drives it like the real dylib:
//
//	lib, _ := standin.Shared()
//	_ = standin.Attach(lib)
//	e, err := coreai.Open(bundleDir+"/coreai", coreai.Options{Bridge: lib, Embedding: emb})
//
// A run of a function of the model at path P is computed by the handler
// registered with Handle(P, …) if there is one (tests), else by the
// package's own program: P is a stand-in package directory,
//
//	functions.txt        the function descriptions the bridge serves (csrc/bridge.c)
//	standin.json         Program: kind chunk|head|drafter, layers, inner taps,
//	                     KV layout, entries (rows, prefill, kv_len, an own KV layout), the config
//	weights.safetensors  float32 tensors under checkpoint names, only this package's
//
// read on the first run of the package and kept until the bridge has
// released every model loaded from P. Chunk entries are computed by
// ane/coreai/internal/refchunk, the head by refchunk.Head, the drafter's draft and
// ctx64 by ane/coreai/internal/refdraft. A package without these files, or with a
// corrupt one, fails its runs with an error naming the file. WriteRuntime
// and WriteDrafterPackage write such packages; WriteLayout, and
// WriteFunctions with FunctionsText or DrafterFunctions, write packages
// with functions.txt alone, for Handle handlers.
//
// Package standintest holds what the tests of ane/coreai and of this
// package share: the bridge built once per test binary, the tiny
// synthetic model, and the comparisons with ane/ref and ane/speculative/dflash.
//
// Switches for tests of the layers above:
//   - SetFault(f): f is consulted before every run; its error fails the run.
//   - TB_ABI_VERSION: the ABI version cai_abi_version reports (default 1).
//   - TB_OS_MPSGRAPH_VERSION: the OS MPSGraph version (default 7.0.80);
//     packages whose functions.txt names a newer one fail a checked load.
//   - "fail_if_exists PATH" in functions.txt: the load fails while PATH
//     exists (a stale specialization cache).
//
// Live reports the bridge's live models, functions, buffers and bindings;
// Callbacks the purego callbacks made (one per process).
package standin
