# Homebrew formula for forged (the Forge model daemon) and forgectl.
#
# Not run in this project's CI (Linux): `ruby -c` checks its syntax there;
# `brew audit --strict --new forged` and `brew install --build-from-source`
# must be run on a Mac before publishing (docs/SERVICE.md).
#
# As committed it is head-only (`brew install --HEAD forged`): there is no
# release tarball to name yet. For a release, release-formula.sh VERSION
# makes the tarball with `git archive` and renders this formula with its
# url and real sha256 (go test ./packaging/ checks that they match).
class Forged < Formula
  desc "Local daemon serving the ANEMLL Forge Qwen3.8-27B model to apps on this Mac"
  homepage "https://github.com/forgedaemon/forged"
  head "https://github.com/forgedaemon/forged.git", branch: "main"

  depends_on "go" => :build
  depends_on arch: :arm64
  depends_on :macos

  def install
    ldflags = %W[
      -s -w
      -X github.com/forgedaemon/forged/internal/version.Version=#{version}
      -X github.com/forgedaemon/forged/internal/version.Date=#{time.iso8601}
    ]
    ENV["CGO_ENABLED"] = "0"
    system "go", "build", *std_go_args(ldflags:, output: bin/"forged"), "./cmd/forged"
    system "go", "build", *std_go_args(ldflags:, output: bin/"forgectl"), "./cmd/forgectl"
    # The Core AI bridge needs Xcode's swiftc and the macOS 27 SDK; build.sh
    # signs it ad hoc (Homebrew builds are not notarized).
    system "packaging/bridge/build.sh", lib/"forged"
  end

  def post_install
    (var/"forged").mkpath
    (var/"log/forged").mkpath
  end

  def caveats
    <<~EOS
      Start the daemon with either (not both: they would race for the socket)
        brew services start forged      # Homebrew's LaunchAgent (homebrew.mxcl.forged)
        forged install                  # forged's own LaunchAgent (dev.forged.forged)
      First load compiles the model for the Neural Engine (about 20 minutes, 11-14 GB
      of cache in ~/Library/Caches). Check the machine with: forgectl doctor
    EOS
  end

  # Same policy as `forged install`: restart only after a crash, an app's
  # resource limits (forged serves apps over a Unix socket, not XPC, so an
  # Adaptive job would never be boosted), 30 s between restarts.
  service do
    run [opt_bin/"forged", "run", "--config", etc/"forged/config.json"]
    run_at_load true
    keep_alive successful_exit: false
    process_type :interactive
    throttle_interval 30
    # (the service block delegates opt_prefix, not opt_lib)
    environment_variables FORGE_BRIDGE: opt_prefix/"lib/forged/libCoreAIBridge.dylib"
    log_path var/"log/forged/forged.log"
    error_log_path var/"log/forged/forged.log"
  end

  test do
    assert_match version.to_s, shell_output("#{bin}/forged version")
    plist = shell_output("#{bin}/forged install --print --target launchd 2>/dev/null")
    assert_match "<key>KeepAlive</key>", plist
    assert_match "FAIL", shell_output("#{bin}/forgectl doctor --socket #{testpath}/none.sock 2>&1", 2)
  end
end
