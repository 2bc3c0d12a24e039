package paths

func platform(e Env) Layout { return Linux(e) }
