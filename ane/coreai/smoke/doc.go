// Package smoke is the Core AI hardware smoke test of a bundle (the
// published quick-test): the target through ane/coreai, the bundle's
// DFlash2 drafter through ane/coreai/draft, greedy speculative decoding of
// a raw prompt with every logits row checked finite. forgectl coreai smoke
// and verify --smoke run it.
package smoke
