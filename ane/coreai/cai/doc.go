// Package cai is the Go side of the Core AI bridge's cai_* C ABI, through
// purego: opening the library (once per path, every symbol registered, the
// ABI version checked), the handles (package, function, buffer, binding),
// runs and their errors (RunError), element access to buffers, where the
// bridge library is looked for, and loading a package the way the published
// runtime does on this Mac (chip, bonded compile mode, compiled or source
// package, compile-cache purge and retry). The Swift bridge that exports
// the ABI is bridge/CoreAIBridge.swift; its Linux stand-in is
// ane/coreai/standin. docs/COREAI.md describes the ABI.
package cai
