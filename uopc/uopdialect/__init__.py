"""The uop dialect: tensor-level operations of uopc (SPEC §4)."""

from xdsl.dialect_interfaces.constant_materialization import ConstantMaterializationInterface
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Attribute, Dialect, Operation

from uopc.uopdialect.gpu_schedule import GpuScheduleAttr
from uopc.uopdialect.ops import *  # noqa: F403
from uopc.uopdialect.ops import ALL_OPS, ConstOp
from uopc.uopdialect.schedule import ScheduleAttr


class UopConstantMaterializer(ConstantMaterializationInterface):
    """Folded values become `uop.const` ops."""

    def materialize_constant(self, value: Attribute, type: Attribute) -> Operation | None:
        if isinstance(value, DenseIntOrFPElementsAttr) and value.get_type() == type:
            return ConstOp.of(value)
        return None


Uop = Dialect("uop", list(ALL_OPS), [ScheduleAttr, GpuScheduleAttr], [UopConstantMaterializer()])
