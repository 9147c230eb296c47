// A user's own bug in Qt Quick 3D, for tests/integration/tests/qt_quick.rs: a CustomMaterial whose fragment
// shader (nan.frag, which Qt wraps in the shader it generates and compiles at run time) normalizes a zero
// vector in one cell of an 8x8 grid. The view is 256x256 pixels; the rectangle fills the middle 189 of them
// (256 units wide, seen from 300 units with Qt's 60-degree field of view), so that cell, u and v in
// [0.5, 0.625), covers pixels x 128-151 and y 104-127.
import QtQuick
import QtQuick3D

View3D {
    width: 256; height: 256
    environment: SceneEnvironment { clearColor: "black"; backgroundMode: SceneEnvironment.Color }
    PerspectiveCamera { position: Qt.vector3d(0, 0, 300) }
    Model {
        source: "#Rectangle"; scale: Qt.vector3d(2.56, 2.56, 1)
        materials: CustomMaterial {
            shadingMode: CustomMaterial.Unshaded
            vertexShader: "nan.vert"
            fragmentShader: "nan.frag"
        }
    }
}
