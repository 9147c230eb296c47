// The scene of tests/integration/tests/qt_quick.rs: Qt Quick 3D's physically based and default materials
// lit by three shadow-casting lights (Qt's exponential shadow maps), ambient occlusion, MSAA and filmic
// tone mapping, a texture that Qt renders from a 2D item, over a 2D gradient with text and a rounded
// rectangle. Nothing moves, and text is rasterized (NativeRendering): Qt's distance-field glyphs came out
// a little differently from run to run. No post-processing effects: with HDRBloomTonemap,
// ChromaticAberration or Fxaa, Qt 6.4's QML engine aborts on a corrupted heap when it is destroyed, with or
// without any layer, and a Vignette pass hid the one-step differences in the shadows that this scene is
// there to catch.
import QtQuick
import QtQuick3D

Rectangle {
    width: 640; height: 480
    gradient: Gradient {
        GradientStop { position: 0.0; color: "#202040" }
        GradientStop { position: 1.0; color: "#80a0c0" }
    }
    View3D {
        anchors.fill: parent
        environment: SceneEnvironment {
            clearColor: "transparent"
            backgroundMode: SceneEnvironment.Transparent
            antialiasingMode: SceneEnvironment.MSAA
            antialiasingQuality: SceneEnvironment.High
            aoStrength: 50
            aoDistance: 10
            tonemapMode: SceneEnvironment.TonemapModeFilmic
        }
        PerspectiveCamera { position: Qt.vector3d(0, 200, 600); eulerRotation.x: -15 }
        DirectionalLight { eulerRotation.x: -40; eulerRotation.y: -30; castsShadow: true; brightness: 1.2 }
        PointLight { position: Qt.vector3d(-200, 250, 200); color: "#ffd0a0"; castsShadow: true; brightness: 2 }
        SpotLight { position: Qt.vector3d(200, 300, 100); eulerRotation.x: -60; color: "#a0d0ff"; brightness: 5; castsShadow: true }
        Model {
            source: "#Rectangle"; scale: Qt.vector3d(10, 10, 1); eulerRotation.x: -90
            materials: PrincipledMaterial { baseColor: "#909090"; roughness: 0.8 }
        }
        Model {
            source: "#Sphere"; position: Qt.vector3d(-150, 60, 0)
            materials: PrincipledMaterial { baseColor: "#c04040"; metalness: 1.0; roughness: 0.2 }
        }
        Model {
            source: "#Cube"; position: Qt.vector3d(20, 50, 0); eulerRotation: Qt.vector3d(20, 40, 0)
            materials: PrincipledMaterial { baseColor: "#40c040"; roughness: 0.5; clearcoatAmount: 1.0 }
        }
        Model {
            source: "#Cylinder"; position: Qt.vector3d(170, 50, 50)
            materials: DefaultMaterial {
                diffuseColor: "#ffffff"; specularAmount: 0.7
                diffuseMap: Texture {
                    sourceItem: Rectangle {
                        width: 128; height: 128
                        gradient: Gradient { GradientStop { position: 0; color: "#4040c0" } GradientStop { position: 1; color: "#c040c0" } }
                        Text { anchors.centerIn: parent; text: "Qt"; font.pixelSize: 48; color: "white"; renderType: Text.NativeRendering }
                    }
                }
            }
        }
        Model {
            source: "#Cone"; position: Qt.vector3d(0, 50, 200); opacity: 0.6
            materials: PrincipledMaterial { baseColor: "#e0e040"; alphaMode: PrincipledMaterial.Blend }
        }
    }
    Text { x: 20; y: 20; text: "Blackbox under Qt Quick"; font.pixelSize: 28; color: "white"; style: Text.Outline; renderType: Text.NativeRendering }
    Rectangle { x: 20; y: 400; width: 200; height: 50; radius: 12; color: "#60ff8000"; border.color: "white"; border.width: 3; antialiasing: true }
}
