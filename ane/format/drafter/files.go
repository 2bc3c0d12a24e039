// Package drafter is the DFlash2 drafter directory format: its file names,
// the sidecar metadata, the published architecture's fixed shape, and the
// pairing rules between a drafter and a target. The bundle verifier and
// the runtimes (ane/speculative/dflash on the CPU, ane/coreai on Core AI)
// all read it; none of it runs a model.
package drafter

// Files of a drafter directory.
const (
	ConfigFile   = "config.json"
	WeightsFile  = "model.safetensors"
	SelectorFile = "selector.safetensors"
	MetadataFile = "dflash2_lut4_gptq.json"
)

// Selector codebook tensor names in selector.safetensors (the same names
// the bundle integrity check requires).
const (
	PredecessorCodebook = "candidate_selector.predecessor_codebook"
	SuccessorCodebook   = "candidate_selector.successor_codebook"
)

// FlushRows is the block size of context flushes (the published ctx64
// entry, the sidecar's RP); PendingRows is how many rows may wait for the
// next draft call (its R).
const (
	FlushRows   = 64
	PendingRows = 8
)
