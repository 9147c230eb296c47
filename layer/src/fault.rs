//! What the driver can say about a fault: `VK_EXT_device_fault` after a loss, and NV diagnostic checkpoints.

use ash::vk;
use blackbox_report as model;

use crate::device::Device;

/// `VK_EXT_device_fault` data, where the device has the extension. Drivers answer only once the device is
/// lost (the H200's gave `VK_ERROR_UNKNOWN` while merely hung), which the note says.
pub fn read(device: &Device, kind: model::Kind) -> (Option<model::DeviceFault>, Option<Vec<u8>>) {
    if !device.capabilities.device_fault {
        return (None, None);
    }
    let Some(get) = device.next.get_device_fault_info_ext else {
        return (None, None);
    };
    let mut counts = vk::DeviceFaultCountsEXT::default();
    // SAFETY: a live device with VK_EXT_device_fault; counts query with no info struct.
    let result = unsafe { get(device.handle, &mut counts, std::ptr::null_mut()) };
    if result != vk::Result::SUCCESS {
        let note = format!(
            "vkGetDeviceFaultInfoEXT returned {result:?}{}",
            if kind == model::Kind::DeviceLost {
                ""
            } else {
                " (drivers answer only once the device is lost)"
            }
        );
        let fault = model::DeviceFault {
            description: String::new(),
            addresses: Vec::new(),
            vendor_infos: Vec::new(),
            vendor_binary: None,
            note: Some(note),
        };
        return (Some(fault), None);
    }
    let mut addresses =
        vec![vk::DeviceFaultAddressInfoEXT::default(); counts.address_info_count as usize];
    let mut vendors =
        vec![vk::DeviceFaultVendorInfoEXT::default(); counts.vendor_info_count as usize];
    let mut binary = vec![0u8; counts.vendor_binary_size as usize];
    let mut info = vk::DeviceFaultInfoEXT {
        p_address_infos: addresses.as_mut_ptr(),
        p_vendor_infos: vendors.as_mut_ptr(),
        p_vendor_binary_data: if binary.is_empty() {
            std::ptr::null_mut()
        } else {
            binary.as_mut_ptr().cast()
        },
        ..Default::default()
    };
    // SAFETY: arrays sized from the counts query.
    let result = unsafe { get(device.handle, &mut counts, &mut info) };
    let description = crate::raw::c_chars(&info.description);
    let addresses = addresses
        .iter()
        .take(counts.address_info_count as usize)
        .map(|a| model::FaultAddress {
            kind: address_kind(a.address_type).to_owned(),
            address: format!("{:#x}", a.reported_address),
            precision: a.address_precision,
            resource: crate::address_bindings::near(device, a.reported_address),
        })
        .collect();
    let vendor_infos = vendors
        .iter()
        .take(counts.vendor_info_count as usize)
        .map(|v| {
            format!(
                "{} (code {:#x}, data {:#x})",
                crate::raw::c_chars(&v.description),
                v.vendor_fault_code,
                v.vendor_fault_data
            )
        })
        .collect();
    binary.truncate(counts.vendor_binary_size as usize);
    let has_binary = !binary.is_empty();
    let fault = model::DeviceFault {
        description,
        addresses,
        vendor_infos,
        vendor_binary: has_binary.then(|| "vendor-fault-binary.bin".to_owned()),
        note: (result != vk::Result::SUCCESS)
            .then(|| format!("vkGetDeviceFaultInfoEXT returned {result:?}")),
    };
    (Some(fault), has_binary.then_some(binary))
}

fn address_kind(t: vk::DeviceFaultAddressTypeEXT) -> &'static str {
    match t {
        vk::DeviceFaultAddressTypeEXT::READ_INVALID => "read of an invalid address",
        vk::DeviceFaultAddressTypeEXT::WRITE_INVALID => "write to an invalid address",
        vk::DeviceFaultAddressTypeEXT::EXECUTE_INVALID => "execution of an invalid address",
        vk::DeviceFaultAddressTypeEXT::INSTRUCTION_POINTER_UNKNOWN => {
            "instruction pointer (unknown fault)"
        }
        vk::DeviceFaultAddressTypeEXT::INSTRUCTION_POINTER_INVALID => {
            "instruction pointer (invalid)"
        }
        vk::DeviceFaultAddressTypeEXT::INSTRUCTION_POINTER_FAULT => "instruction pointer (fault)",
        _ => "address",
    }
}

/// The last NV diagnostic checkpoints per queue, decoded to the command buffer (by handle, while the layer
/// knows it) and marker unit.
pub fn checkpoints(device: &Device) -> Vec<model::Checkpoint> {
    if !device.capabilities.checkpoints {
        return Vec::new();
    }
    let Some(get) = device.next.get_queue_checkpoint_data_nv else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let queues = device
        .queues
        .try_read_for(std::time::Duration::from_millis(200))
        .map(|q| q.clone())
        .unwrap_or_default();
    for q in queues {
        let mut count = 0u32;
        // SAFETY: a live queue of this device; two-call idiom.
        unsafe { get(q.handle, &mut count, std::ptr::null_mut()) };
        let mut data = vec![vk::CheckpointDataNV::default(); count as usize];
        // SAFETY: the same queue, with room for the `count` entries the first call gave.
        unsafe { get(q.handle, &mut count, data.as_mut_ptr()) };
        for d in data.iter().take(count as usize) {
            let tag = d.p_checkpoint_marker as usize as u64;
            let id = (tag >> 32) as u32;
            let command_buffer = crate::command_buffer::handle_of(id).map_or_else(
                || format!("#{id}"),
                |h| format!("{:#x}", vk::Handle::as_raw(h)),
            );
            out.push(model::Checkpoint {
                queue: format!("{}.{}", q.family, q.index),
                stage: format!("{:?}", d.stage),
                marker: format!(
                    "command buffer {command_buffer}, unit {}",
                    tag & 0xffff_ffff
                ),
            });
        }
    }
    out
}
