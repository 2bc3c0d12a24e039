module github.com/forgedaemon/forged

go 1.26.0

require (
	github.com/dlclark/regexp2 v1.12.0
	github.com/ebitengine/purego v0.11.3
	github.com/fsnotify/fsnotify v1.10.1
	github.com/kardianos/service v1.3.0
	github.com/spf13/cobra v1.10.2
	golang.org/x/term v0.48.0
	gonum.org/v1/gonum v0.17.0
	howett.net/plist v1.0.1
)

require github.com/santhosh-tekuri/jsonschema/v6 v6.0.2

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9
	github.com/vmihailenco/msgpack/v5 v5.4.1
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	github.com/x448/float16 v0.8.4
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.44.0
)
