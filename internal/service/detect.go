package service

import (
	"fmt"

	kservice "github.com/kardianos/service"
)

// CheckManager makes sure the machine's service manager is the one target
// needs before anything is installed. kardianos/service knows how to detect
// each init system (launchd, systemd, SysV, upstart, OpenRC…); we use it for
// that, but drive launchctl and systemctl ourselves: its launchd start/stop use the
// deprecated load/unload verbs and its user units name multi-user.target.
func CheckManager(target Target) error {
	want := map[Target]string{Launchd: "darwin-launchd", Systemd: "linux-systemd"}[target]
	sys := kservice.ChosenSystem()
	if sys == nil {
		return fmt.Errorf("no service manager found on this machine (need %s); use --print to see what would be installed, or run `forged run` in the foreground", target)
	}
	if got := sys.String(); got != want {
		return fmt.Errorf("this machine's service manager is %s, not %s; use --print to see what would be installed, or run `forged run` in the foreground", got, target)
	}
	return nil
}
