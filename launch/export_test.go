package launch

// WithoutCgroup is l making no cgroup for a server whose budget needs
// none, as where none can be made: the subreaper's case, for tests.
func WithoutCgroup(l Process) Process {
	l.noCgroup = true
	return l
}
