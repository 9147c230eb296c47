"""Captures one frame of a program with RenderDoc and lists what the capture holds.

Run with Debian's python3 (python3-renderdoc is built for it):

    /usr/bin/python3 renderdoc_capture.py OUT_DIR [NAME=VALUE ...] -- PROGRAM [ARGS ...]

Launches PROGRAM with RenderDoc's capture layer injected and the NAME=VALUE variables set for it alone
(not for this process, which opens the capture afterwards), triggers a capture once the program has
registered its graphics API (at once: the next frame), then opens the capture for replay and prints one line per action:
`action <event id> <name>`, and `capture <path>`. Exits 1 when no capture came within 60 s.
"""

import sys
import time

import renderdoc as rd


def main():
    args = sys.argv[1:]
    out = args.pop(0)
    split = args.index("--")
    variables, program = args[:split], args[split + 1 :]
    env = []
    for pair in variables:
        name, value = pair.split("=", 1)
        env.append(rd.EnvironmentModification(rd.EnvMod.Set, rd.EnvSep.NoSep, name, value))

    rd.InitialiseReplay(rd.GlobalEnvironment(), [])
    launched = rd.ExecuteAndInject(
        program[0], out, " ".join(program[1:]), env, out + "/capture",
        rd.GetDefaultCaptureOptions(), False)
    if launched.result != rd.ResultCode.Succeeded:
        print("launch failed:", launched.result, flush=True)
        return 1
    control = None
    for _ in range(100):
        control = rd.CreateTargetControl("", launched.ident, "blackbox-test", True)
        if control:
            break
        time.sleep(0.1)
    if not control:
        print("no connection to the program", flush=True)
        return 1
    path = None
    triggered = False
    start = time.time()
    while time.time() - start < 60 and path is None:
        message = control.ReceiveMessage(None)
        if not triggered and control.GetAPI():
            # At once: a program that draws a fixed number of frames may be done a second later.
            control.TriggerCapture(1)
            triggered = True
        if message.type == rd.TargetControlMessageType.NewCapture:
            path = message.newCapture.path
        elif message.type == rd.TargetControlMessageType.Disconnected:
            break
    control.Shutdown()
    if path is None:
        print("no capture", flush=True)
        return 1
    print("capture", path, flush=True)

    capture = rd.OpenCaptureFile()
    if capture.OpenFile(path, "", None) != rd.ResultCode.Succeeded:
        print("cannot open the capture", flush=True)
        return 1
    status, controller = capture.OpenCapture(rd.ReplayOptions(), None)
    if status != rd.ResultCode.Succeeded:
        print("cannot replay the capture:", status, flush=True)
        return 1
    structured = controller.GetStructuredFile()

    def walk(actions):
        for action in actions:
            print("action", action.eventId, action.GetName(structured), flush=True)
            walk(action.children)

    walk(controller.GetRootActions())
    controller.Shutdown()
    capture.Shutdown()
    rd.ShutdownReplay()
    return 0


if __name__ == "__main__":
    sys.exit(main())
