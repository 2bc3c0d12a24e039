package paths

func platform(e Env) Layout { return Darwin(e) }
