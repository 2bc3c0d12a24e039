// CoreAIBridge.swift — the forged Core AI bridge: a C ABI (cai_*, version 1)
// over Core AI's Swift-only API, loaded by the Go daemon with purego.
//
// STATUS: written from the ABI description (docs/COREAI.md); it has NOT been
// compiled or run (no macOS 27 SDK or Apple hardware was available). The Go
// side's tests run against testbridge/testbridge.c, which implements the
// same ABI on Linux. Build: packaging/bridge/build.sh.
//
// Conventions: handles are retained Swift objects passed as opaque pointers
// (Unmanaged); fallible calls take (err, cap) and return NULL / non-zero on
// failure with a NUL-terminated message; variable-length results are JSON
// written into (out, cap), returning the length needed. Every entry point
// runs inside an autorelease pool: Go threads have none. Async Core AI calls
// are bridged to blocking calls with a semaphore on a detached Task.

import CoreAI
import Foundation
import IOSurface

private let abiVersion: Int32 = 1

// MARK: helpers

private func writeC(_ s: String, _ out: UnsafeMutablePointer<CChar>?, _ cap: Int64) {
    guard let out = out, cap > 0 else { return }
    let bytes = Array(s.utf8.prefix(Int(cap) - 1))
    bytes.withUnsafeBufferPointer { src in
        src.baseAddress.map { memcpy(out, $0, bytes.count) }
    }
    out[bytes.count] = 0
}

/// writeJSON copies s when it fits and returns the length it needs.
private func writeJSON(_ s: String, _ out: UnsafeMutablePointer<CChar>?, _ cap: Int64) -> Int64 {
    let n = Int64(s.utf8.count)
    if n < cap { writeC(s, out, cap) }
    return n
}

/// blocking runs an async throwing closure to completion from a C caller's thread.
private func blocking<T>(_ body: @escaping @Sendable () async throws -> T) -> Result<T, Error> {
    let sem = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    Task.detached(priority: .userInitiated) {
        do { box.value = .success(try await body()) } catch { box.value = .failure(error) }
        sem.signal()
    }
    sem.wait() // the semaphore orders the Task's write before this read
    return box.value
}

private final class ResultBox<T>: @unchecked Sendable {
    var value: Result<T, Error> = .failure(BridgeError("no result"))
}

private struct BridgeError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

private func retain<T: AnyObject>(_ o: T) -> UnsafeMutableRawPointer { Unmanaged.passRetained(o).toOpaque() }
private func borrow<T: AnyObject>(_ p: UnsafeMutableRawPointer, as _: T.Type) -> T {
    Unmanaged<T>.fromOpaque(p).takeUnretainedValue()
}
private func release<T: AnyObject>(_ p: UnsafeMutableRawPointer?, as _: T.Type) {
    if let p = p { Unmanaged<T>.fromOpaque(p).release() }
}

// dtype codes of the ABI: 0 f16, 1 f32, 2 i32, 3 i8, 4 u8, 5 bf16, 6 i16, 7 u16, 8 i64, 9 f64, 10 bool.
private let scalarTypes: [NDArray.ScalarType] = [
    .float16, .float32, .int32, .int8, .uint8, .bfloat16, .int16, .uint16, .int64, .float64, .bool,
]
private let dtypeNames = ["f16", "f32", "i32", "i8", "u8", "bf16", "i16", "u16", "i64", "f64", "bool"]
private let dtypeSizes = [2, 4, 4, 1, 1, 2, 2, 2, 8, 8, 1]

private func dtypeCode(_ t: NDArray.ScalarType) -> Int? { scalarTypes.firstIndex(of: t) }

// MARK: objects behind the handles

private final class ModelBox: @unchecked Sendable {
    let model: AIModel
    let path: String
    init(_ m: AIModel, _ p: String) { model = m; path = p }
}

private struct TensorSpec {
    let name: String
    let dtype: Int
    let shape: [Int]
    let strides: [Int]
    let nbytes: Int
}

private final class FunctionBox: @unchecked Sendable {
    let fn: InferenceFunction
    let name: String
    let inputs: [TensorSpec], outputs: [TensorSpec], states: [TensorSpec]
    init(_ f: InferenceFunction, _ n: String, _ i: [TensorSpec], _ o: [TensorSpec], _ s: [TensorSpec]) {
        fn = f; name = n; inputs = i; outputs = o; states = s
    }
}

/// BufferBox owns an IOSurface laid out as (rows = product of leading dims)
/// × (row stride bytes): Core AI's IOSurface views need width == last dimension.
private final class BufferBox: @unchecked Sendable {
    let surface: IOSurface
    let dtype: Int
    let shape: [Int]
    let strides: [Int]
    let nbytes: Int
    init(_ s: IOSurface, _ d: Int, _ sh: [Int], _ st: [Int], _ n: Int) {
        surface = s; dtype = d; shape = sh; strides = st; nbytes = n
    }
}

private final class BindingBox: @unchecked Sendable {
    let fn: FunctionBox
    let inputs: [(String, BufferBox)], outputs: [(String, BufferBox)], states: [(String, BufferBox)]
    init(_ f: FunctionBox, _ i: [(String, BufferBox)], _ o: [(String, BufferBox)], _ s: [(String, BufferBox)]) {
        fn = f; inputs = i; outputs = o; states = s
    }
}

// MARK: versions

@_cdecl("cai_abi_version")
public func cai_abi_version() -> Int32 { abiVersion }

private let releaseString = strdup("forged CoreAIBridge 1 (Core AI, macOS 27)")

@_cdecl("cai_release")
public func cai_release() -> UnsafePointer<CChar>? { UnsafePointer(releaseString) }

private func plistVersion(_ path: String) -> String? {
    guard let d = NSDictionary(contentsOfFile: path) else { return nil }
    return d["CFBundleShortVersionString"] as? String
}

@_cdecl("cai_os_mpsgraph_version")
public func cai_os_mpsgraph_version(_ out: UnsafeMutablePointer<CChar>?, _ cap: Int64) -> Int32 {
    autoreleasepool {
        let p = "/System/Library/Frameworks/MetalPerformanceShadersGraph.framework/Versions/A/Resources/version.plist"
        guard let v = plistVersion(p) else { writeC("cannot read \(p)", out, cap); return -1 }
        writeC(v, out, cap)
        return 0
    }
}

/// The MPSGraph version a package was built with: the version.plist of the
/// first .mpsgraphpackage inside it.
@_cdecl("cai_package_mpsgraph_version")
public func cai_package_mpsgraph_version(_ path: UnsafePointer<CChar>, _ out: UnsafeMutablePointer<CChar>?,
                                         _ cap: Int64) -> Int32 {
    autoreleasepool {
        let root = String(cString: path)
        guard let e = FileManager.default.enumerator(atPath: root) else {
            writeC("cannot read package \(root)", out, cap); return -1
        }
        while let rel = e.nextObject() as? String {
            if rel.hasSuffix(".mpsgraphpackage"), let v = plistVersion(root + "/" + rel + "/version.plist") {
                writeC(v, out, cap)
                return 0
            }
        }
        writeC("package \(root) holds no .mpsgraphpackage with a version.plist", out, cap)
        return -1
    }
}

// MARK: models and functions

private func options(_ compute: Int32) -> SpecializationOptions? {
    switch compute {
    case 0: return SpecializationOptions(preferredComputeUnitKind: .neuralEngine)
    case 1: return SpecializationOptions(preferredComputeUnitKind: .gpu)
    case 2: return .cpuOnly
    case 3: return .default
    default: return nil
    }
}

@_cdecl("cai_model_load")
public func cai_model_load(_ path: UnsafePointer<CChar>, _ compute: Int32, _ checkVersion: Int32,
                          _ err: UnsafeMutablePointer<CChar>?, _ cap: Int64) -> UnsafeMutableRawPointer? {
    autoreleasepool {
        let p = String(cString: path)
        guard let opts = options(compute) else { writeC("compute unit \(compute) is not 0..3", err, cap); return nil }
        if checkVersion != 0 {
            var pkg = [CChar](repeating: 0, count: 64), os = [CChar](repeating: 0, count: 64)
            if cai_package_mpsgraph_version(path, &pkg, 64) == 0, cai_os_mpsgraph_version(&os, 64) == 0 {
                let pv = String(cString: pkg), ov = String(cString: os)
                if pv.compare(ov, options: .numeric) == .orderedDescending {
                    writeC("package \(p) needs MPSGraph \(pv), the OS has \(ov)", err, cap)
                    return nil
                }
            }
        }
        let url = URL(fileURLWithPath: p)
        switch blocking({ try await AIModel(contentsOf: url, options: opts) }) {
        case .success(let m): return retain(ModelBox(m, p))
        case .failure(let e): writeC("cannot load model \(p): \(e)", err, cap); return nil
        }
    }
}

@_cdecl("cai_model_release")
public func cai_model_release(_ m: UnsafeMutableRawPointer?) {
    autoreleasepool { release(m, as: ModelBox.self) }
}

private func jsonString(_ v: Any) -> String {
    guard let d = try? JSONSerialization.data(withJSONObject: v, options: [.sortedKeys]) else { return "null" }
    return String(decoding: d, as: UTF8.self)
}

@_cdecl("cai_model_function_names")
public func cai_model_function_names(_ m: UnsafeMutableRawPointer, _ out: UnsafeMutablePointer<CChar>?,
                                     _ cap: Int64) -> Int64 {
    autoreleasepool { writeJSON(jsonString(borrow(m, as: ModelBox.self).model.functionNames), out, cap) }
}

private func spec(_ name: String, _ d: InferenceValue.Descriptor?) throws -> TensorSpec {
    guard case .ndArray(let nd)? = d else { throw BridgeError("\(name) is not an NDArray") }
    guard let code = dtypeCode(nd.scalarType) else { throw BridgeError("\(name) has an unsupported scalar type") }
    if nd.hasDynamicShape { throw BridgeError("\(name) has a dynamic shape") }
    return TensorSpec(name: name, dtype: code, shape: nd.shape, strides: nd.preferredStrides,
                      nbytes: nd.minimumByteCount)
}

@_cdecl("cai_function_load")
public func cai_function_load(_ m: UnsafeMutableRawPointer, _ name: UnsafePointer<CChar>,
                              _ err: UnsafeMutablePointer<CChar>?, _ cap: Int64) -> UnsafeMutableRawPointer? {
    autoreleasepool {
        let box = borrow(m, as: ModelBox.self)
        let n = String(cString: name)
        do {
            guard let f = try box.model.loadFunction(named: n) else {
                writeC("model has no function \(n)", err, cap); return nil
            }
            let d = f.descriptor
            let ins = try d.inputNames.map { try spec($0, d.inputDescriptor(of: $0)) }
            let outs = try d.outputNames.map { try spec($0, d.outputDescriptor(of: $0)) }
            let sts = try d.stateNames.map { try spec($0, d.stateDescriptor(of: $0)) }
            return retain(FunctionBox(f, n, ins, outs, sts))
        } catch {
            writeC("function \(n): \(error)", err, cap)
            return nil
        }
    }
}

@_cdecl("cai_function_release")
public func cai_function_release(_ f: UnsafeMutableRawPointer?) {
    autoreleasepool { release(f, as: FunctionBox.self) }
}

@_cdecl("cai_function_describe")
public func cai_function_describe(_ f: UnsafeMutableRawPointer, _ out: UnsafeMutablePointer<CChar>?,
                                  _ cap: Int64) -> Int64 {
    autoreleasepool {
        let b = borrow(f, as: FunctionBox.self)
        func list(_ ts: [TensorSpec]) -> [[String: Any]] {
            ts.map { ["name": $0.name, "dtype": dtypeNames[$0.dtype], "shape": $0.shape, "strides": $0.strides,
                      "nbytes": $0.nbytes, "dynamic": false] }
        }
        let d: [String: Any] = ["name": b.name, "inputs": list(b.inputs), "outputs": list(b.outputs),
                                "states": list(b.states)]
        return writeJSON(jsonString(d), out, cap)
    }
}

// MARK: buffers

@_cdecl("cai_buffer_create")
public func cai_buffer_create(_ dtype: Int32, _ rank: Int32, _ shapeP: UnsafePointer<Int64>,
                              _ stridesP: UnsafePointer<Int64>?, _ err: UnsafeMutablePointer<CChar>?,
                              _ cap: Int64) -> UnsafeMutableRawPointer? {
    autoreleasepool {
        guard dtype >= 0, Int(dtype) < scalarTypes.count else { writeC("dtype code \(dtype) is not 0..10", err, cap); return nil }
        guard rank >= 1, rank <= 8 else { writeC("rank \(rank) is not 1..8", err, cap); return nil }
        let shape = (0..<Int(rank)).map { Int(shapeP[$0]) }
        if let i = shape.firstIndex(where: { $0 < 1 }) { writeC("dimension \(i) is \(shape[i])", err, cap); return nil }
        var strides = [Int](repeating: 1, count: shape.count)
        if let sp = stridesP {
            strides = (0..<Int(rank)).map { Int(sp[$0]) }
            if strides.last != 1 { writeC("last stride is \(strides.last!), must be 1", err, cap); return nil }
            for i in 0..<(shape.count - 1) where strides[i] < strides[i + 1] * shape[i + 1] {
                writeC("stride \(i) (\(strides[i])) overlaps dimension \(i + 1)", err, cap); return nil
            }
        } else {
            for i in stride(from: shape.count - 2, through: 0, by: -1) { strides[i] = strides[i + 1] * shape[i + 1] }
        }
        let esize = dtypeSizes[Int(dtype)]
        let rows = shape.dropLast().reduce(1, *)
        let rowBytes = (shape.count > 1 ? strides[shape.count - 2] : shape[0]) * esize
        let nbytes = strides[0] * shape[0] * esize
        let props: [IOSurfacePropertyKey: Any] = [
            .width: shape.last!, .height: rows, .bytesPerElement: esize, .bytesPerRow: rowBytes,
            .allocSize: nbytes, .pixelFormat: 0,
        ]
        guard let s = IOSurface(properties: props) else {
            writeC("cannot allocate an IOSurface of \(nbytes) bytes", err, cap); return nil
        }
        // Go addresses elements with these strides: refuse a surface that
        // padded its rows differently (allocate in the preferred strides).
        if shape.count > 1 && s.bytesPerRow != rowBytes {
            writeC("IOSurface row stride \(s.bytesPerRow) bytes differs from the requested \(rowBytes)", err, cap)
            return nil
        }
        s.lock(options: [], seed: nil)
        memset(s.baseAddress, 0, s.allocationSize) // zero-filled, padding included
        s.unlock(options: [], seed: nil)
        return retain(BufferBox(s, Int(dtype), shape, strides, nbytes))
    }
}

@_cdecl("cai_buffer_address")
public func cai_buffer_address(_ b: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
    autoreleasepool { borrow(b, as: BufferBox.self).surface.baseAddress }
}

@_cdecl("cai_buffer_nbytes")
public func cai_buffer_nbytes(_ b: UnsafeMutableRawPointer) -> Int64 {
    autoreleasepool { Int64(borrow(b, as: BufferBox.self).nbytes) }
}

@_cdecl("cai_buffer_release")
public func cai_buffer_release(_ b: UnsafeMutableRawPointer?) {
    autoreleasepool { release(b, as: BufferBox.self) }
}

// MARK: bindings and runs

private func bindRole(_ fn: FunctionBox, _ role: String, _ want: [TensorSpec], _ n: Int32,
                      _ namesP: UnsafePointer<CChar>, _ bufsP: UnsafePointer<UnsafeMutableRawPointer?>) throws
    -> [(String, BufferBox)] {
    if Int(n) != want.count { throw BridgeError("\(fn.name): \(n) \(role)s bound, the function has \(want.count)") }
    var names: [String] = []
    var p = namesP
    for _ in 0..<Int(n) {
        let s = String(cString: p)
        names.append(s)
        p += s.utf8.count + 1
    }
    return try want.map { t in
        let idx = names.indices.filter { names[$0] == t.name }
        if idx.isEmpty { throw BridgeError("\(fn.name): \(role) \(t.name) is not bound") }
        if idx.count > 1 { throw BridgeError("\(fn.name): \(role) \(t.name) is bound twice") }
        guard let raw = bufsP[idx[0]] else { throw BridgeError("\(fn.name): \(role) \(t.name) is bound to a null buffer") }
        let b = borrow(raw, as: BufferBox.self)
        if b.dtype != t.dtype || b.shape != t.shape || b.strides != t.strides {
            throw BridgeError("\(fn.name): \(role) \(t.name) wants \(dtypeNames[t.dtype]) \(t.shape) strides \(t.strides), the buffer is \(dtypeNames[b.dtype]) \(b.shape) strides \(b.strides)")
        }
        return (t.name, b)
    }
}

@_cdecl("cai_binding_create")
public func cai_binding_create(_ f: UnsafeMutableRawPointer,
                               _ nIn: Int32, _ inNames: UnsafePointer<CChar>, _ inBufs: UnsafePointer<UnsafeMutableRawPointer?>,
                               _ nOut: Int32, _ outNames: UnsafePointer<CChar>, _ outBufs: UnsafePointer<UnsafeMutableRawPointer?>,
                               _ nStates: Int32, _ stateNames: UnsafePointer<CChar>, _ stateBufs: UnsafePointer<UnsafeMutableRawPointer?>,
                               _ err: UnsafeMutablePointer<CChar>?, _ cap: Int64) -> UnsafeMutableRawPointer? {
    autoreleasepool {
        let fn = borrow(f, as: FunctionBox.self)
        do {
            let ins = try bindRole(fn, "input", fn.inputs, nIn, inNames, inBufs)
            let outs = try bindRole(fn, "output", fn.outputs, nOut, outNames, outBufs)
            let sts = try bindRole(fn, "state", fn.states, nStates, stateNames, stateBufs)
            for (iname, ib) in ins {
                if let hit = (outs + sts).first(where: { $0.1 === ib }) {
                    throw BridgeError("\(fn.name): input \(iname) aliases \(hit.0)")
                }
            }
            return retain(BindingBox(fn, ins, outs, sts))
        } catch {
            writeC("\(error)", err, cap)
            return nil
        }
    }
}

@_cdecl("cai_binding_release")
public func cai_binding_release(_ b: UnsafeMutableRawPointer?) {
    autoreleasepool { release(b, as: BindingBox.self) }
}

/// cai_run runs the bindings in order in one detached Task; outputs and
/// states are written in place through their views.
@_cdecl("cai_run")
public func cai_run(_ n: Int32, _ bindingsP: UnsafePointer<UnsafeMutableRawPointer?>,
                    _ timesMS: UnsafeMutablePointer<Double>?, _ err: UnsafeMutablePointer<CChar>?,
                    _ cap: Int64) -> Int32 {
    autoreleasepool {
        var boxes: [BindingBox] = []
        for i in 0..<Int(n) {
            guard let p = bindingsP[i] else { writeC("binding \(i) is null", err, cap); return -1 }
            boxes.append(borrow(p, as: BindingBox.self))
        }
        let list = boxes
        let r = blocking { () async throws -> [Double] in
            var times: [Double] = []
            for (i, b) in list.enumerated() {
                let t0 = DispatchTime.now().uptimeNanoseconds
                // Views are built inline and consumed at once: they may be
                // non-escapable, so no helper returns one.
                var inputs = InferenceFunction.Inputs()
                for (name, buf) in b.inputs {
                    inputs.insert(NDArray.RawView(ioSurface: buf.surface, byteOffset: 0, scalarType: scalarTypes[buf.dtype],
                                                  shape: buf.shape, strides: buf.strides), for: name)
                }
                var states = InferenceFunction.MutableViews()
                for (name, buf) in b.states {
                    states.insert(NDArray.MutableRawView(ioSurface: buf.surface, byteOffset: 0, scalarType: scalarTypes[buf.dtype],
                                                         shape: buf.shape, strides: buf.strides), for: name)
                }
                var outs = InferenceFunction.MutableViews()
                for (name, buf) in b.outputs {
                    outs.insert(NDArray.MutableRawView(ioSurface: buf.surface, byteOffset: 0, scalarType: scalarTypes[buf.dtype],
                                                       shape: buf.shape, strides: buf.strides), for: name)
                }
                do {
                    _ = try await b.fn.fn.run(inputs: inputs, states: states, outputViews: outs)
                } catch {
                    throw BridgeError("binding \(i) (\(b.fn.name)): \(error)")
                }
                times.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            }
            return times
        }
        switch r {
        case .success(let times):
            if let tp = timesMS { for (i, t) in times.enumerated() { tp[i] = t } }
            return 0
        case .failure(let e):
            writeC("\(e)", err, cap)
            return -1
        }
    }
}
