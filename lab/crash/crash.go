// Package crash arms crash points on a deployed function built with
// -tags crashpoints, and tells which of them fired: each firing process
// leaves a mark file, so a point kills one process once, whatever restarts.
package crash

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/hookledger/hookledger/internal/inject"
)

// Arm adds HOOKLEDGER_CRASH=spec and HOOKLEDGER_CRASH_MARK=mark to fn's
// environment. restore puts back the environment fn had.
func Arm(ctx context.Context, lam *lambda.Client, fn, spec, mark string) (restore func(context.Context) error, err error) {
	if points, err := inject.ParseCrash(spec); err != nil || len(points) == 0 {
		return nil, fmt.Errorf("crash spec %q: want NAME[:N],... (%v)", spec, err)
	}
	cfg, err := lam.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: &fn})
	if err != nil {
		return nil, fmt.Errorf("read function %s: %w", fn, err)
	}
	env := map[string]string{}
	if cfg.Environment != nil {
		maps.Copy(env, cfg.Environment.Variables)
	}
	was := maps.Clone(env)
	env["HOOKLEDGER_CRASH"], env["HOOKLEDGER_CRASH_MARK"] = spec, mark
	if err := setEnv(ctx, lam, fn, env); err != nil {
		return nil, fmt.Errorf("arm crash %s on %s: %w", spec, fn, err)
	}
	return func(ctx context.Context) error { return setEnv(ctx, lam, fn, was) }, nil
}

func setEnv(ctx context.Context, lam *lambda.Client, fn string, env map[string]string) error {
	_, err := lam.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{
		FunctionName: &fn, Environment: &types.Environment{Variables: env},
	})
	return err
}

// Fired returns the points of spec whose crash happened under mark, sorted.
func Fired(spec, mark string) []string {
	points, _ := inject.ParseCrash(spec)
	var out []string
	for p := range points {
		if _, err := os.Stat(inject.CrashMarkFile(mark, p)); err == nil {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
