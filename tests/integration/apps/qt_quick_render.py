"""Renders a QML scene with Qt Quick on Vulkan and saves the window as a PNG.

Run with Debian's python3 (python3-pyqt6.qtquick3d is built for it):
    python3 qt_quick_render.py SCENE.qml OUT.png
Qt Quick renders through its RHI's Vulkan backend (the graphics API is set before the window exists), on
its threaded render loop. After 10 presented frames the window is read back (`grabWindow` renders the scene
once more into an image) and saved; the script prints `graphics api <name> frames <n>` and quits. A scene
that does not load exits 2; one that does not get there within 60 s exits 3.
"""

import sys

from PyQt6.QtCore import QTimer, QUrl
from PyQt6.QtGui import QGuiApplication
from PyQt6.QtQuick import QQuickView, QQuickWindow, QSGRendererInterface

FRAMES = 10


def main():
    scene, out = sys.argv[1], sys.argv[2]
    QQuickWindow.setGraphicsApi(QSGRendererInterface.GraphicsApi.Vulkan)
    app = QGuiApplication(sys.argv[:1])
    view = QQuickView()
    view.setSource(QUrl.fromLocalFile(scene))
    if view.status() != QQuickView.Status.Ready:
        for error in view.errors():
            print(error.toString(), file=sys.stderr)
        return 2
    view.show()
    frames = 0

    def swapped():
        nonlocal frames
        frames += 1
        if frames < FRAMES:
            view.update()
            return
        if frames == FRAMES:
            if not view.grabWindow().save(out):
                print(f"could not save {out}", file=sys.stderr)
                app.exit(4)
                return
            api = view.rendererInterface().graphicsApi().name
            print(f"graphics api {api} frames {frames}", flush=True)
            app.quit()

    view.frameSwapped.connect(swapped)
    QTimer.singleShot(60_000, lambda: app.exit(3))
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
