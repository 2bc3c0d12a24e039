// Package verify holds the integrity checks (inventory, layout, pairing) and
// quality checks (KL, smoke) run against a bundle.
package verify
