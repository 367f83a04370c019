"""The op classes of ptopipe.ir.opdefs: ``Operation(name, ...)`` builds the class of a
defined op (whoever builds it: a pass, the asm parser, a clone), its typed accessors read
and rewrite operands / attributes / results by name, ``build`` fills defaults, the op
table's spec is derived from the class, and the declared types are verified."""
import pytest

from ptopipe.errors import CompileError
from ptopipe.ir import Block, Operation, parse_ir, verify_ops
from ptopipe.ir.opdefs import (OPDEFS, INITIALIZE_PIPE, AivInitializePipe, ConstOp, ForOp,
                               LoadOp, OpClass, ReserveBufferOp, StoreOp, TFree, TPop, TPush,
                               attribute, operand)
from ptopipe.ir.ops import OPS
from ptopipe.ir.types import INDEX, BufferType, MemorySpace, TensorType, TileValueType
from ptopipe.arch.vocab import Direction, TileSplitAxis

VEC = TileValueType((16, 32), "f32", MemorySpace.Vec)
TEN = TensorType((16, 32), "f32")


def _values(*types):
    b = Block(types)
    return b.args


def test_an_op_of_a_defined_name_is_its_class_with_named_accessors():
    tile, buf = _values(VEC, BufferType("import"))
    op = Operation("pl.tpush", (tile, buf), (), {"split": TileSplitAxis.TILE_UP_DOWN,
                                                  "direction": Direction.DIR_V2C})
    assert type(op) is TPush and op.is_a(TPush) and not op.is_a(TPop)
    assert op.name == TPush.name == "pl.tpush" and TPush.call_name == "tpush"
    assert op.tile is tile and op.buf is buf
    assert op.split is TileSplitAxis.TILE_UP_DOWN and op.direction is Direction.DIR_V2C
    assert type(Operation("pl.no_such_op")) is Operation
    bare = Operation("pl.tpop", (buf,), [VEC], {})
    with pytest.raises(CompileError, match="pl.tpop has no attribute 'type'"):
        bare.result_type
    assert bare.split is TileSplitAxis.TILE_NO_SPLIT         # an omitted default reads as it


def test_setting_an_accessor_rewrites_the_op_and_keeps_use_lists():
    tile, buf, other = _values(VEC, BufferType("import"), VEC)
    op = TPush.build(tile=tile, buf=buf, direction=Direction.DIR_C2V)
    assert op.split is TileSplitAxis.TILE_NO_SPLIT           # the declared default, filled in
    op.tile = other
    assert op.operands[0] is other and not tile.uses and other.uses[0].owner is op
    op.split = TileSplitAxis.TILE_LEFT_RIGHT
    assert op.attributes["split"] is TileSplitAxis.TILE_LEFT_RIGHT


def test_an_attribute_keyed_otherwise_in_the_ir_and_a_result():
    op = ReserveBufferOp.build(buffer_name="ring", size=4096, base=0x100, memory_space="UB",
                               result_types=[BufferType("reserve")])
    assert op.attributes == {"name": "ring", "size": 4096, "base": 0x100, "memory_space": "UB"}
    assert op.name == "pl.reserve_buffer"          # the op's name, not the buffer's
    assert op.buffer_name == "ring" and op.buf is op.results[0]


def test_annotations_are_left_out_until_a_pass_sets_them():
    gm, c2v, v2c = _values(TEN, INDEX, INDEX)
    init = AivInitializePipe.build(gm_slot_buffer=gm, c2v_consumer_buf=c2v, v2c_consumer_buf=v2c,
                                   dir_mask=Direction.DIR_C2V, slot_size=2048)
    assert "ring" not in init.attributes and init.ring is None and init.ring_name("C2V") is None
    init.set_ring_name("C2V", "c2v_ring")
    assert init.attributes["c2v_ring"] == "c2v_ring" and init.ring_name("C2V") == "c2v_ring"
    del init.c2v_ring
    assert "c2v_ring" not in init.attributes and init.ring_name("C2V") is None
    assert init.consumer_bufs == {"C2V": c2v, "V2C": v2c} and init.ways == (Direction.DIR_C2V,)
    assert init.is_a(*INITIALIZE_PIPE)


def test_a_variadic_operand_between_fixed_ones():
    tile, r, c, ten = _values(VEC, INDEX, INDEX, TEN)
    st = StoreOp.build(tile=tile, offsets=[r, c], tensor=ten)
    assert st.tile is tile and st.offsets == [r, c] and st.tensor is ten
    assert StoreOp.offsets.index_of(st, 1) == 2 and StoreOp.tensor.index_of(st) == 3
    ld = LoadOp.build(tensor=ten, offsets=[r, c], shape=(16, 32), result_types=[VEC])
    assert ld.tensor is ten and ld.offsets == [r, c] and ld.result.type == VEC


def test_clone_and_the_asm_parser_build_the_classes():
    text = ('pl.program() {sym_name = "p"} ({\n'
            'pl.func() {sym_name = "k", kind = #kind.AIV} ({\n^bb0(%x: tensor<16x32xf32>):\n'
            '  %c0 = pl.const() {value = 0} : () -> index\n'
            '  %c4 = pl.const() {value = 4} : () -> index\n'
            '  %c1 = pl.const() {value = 1} : () -> index\n'
            '  pl.for(%c0, %c4, %c1) ({\n  ^bb0(%i: index):\n    pl.yield() : () -> ()\n  }) '
            ': (index, index, index) -> ()\n'
            '}) : () -> ()\n}) : () -> ()\n')
    top = parse_ir(text)
    fn = top.body.first
    loop = fn.body.last
    assert loop.is_a(ForOp) and loop.start.op.is_a(ConstOp) and loop.stop.op.value == 4
    assert loop.inits == [] and loop.carried_index(2) is None
    copy = loop.clone()
    assert type(copy) is ForOp and copy.step is loop.step


def test_the_op_table_spec_is_derived_from_the_class():
    spec = OPS["tpush"]
    assert [p.name for p in spec.params] == ["tile", "buf", "split", "direction", "id"]
    assert spec.dsl == "TPUSH" and spec.role == "producer" and OPS["tfree"].role == "consumer"
    assert OPDEFS["pl.tpop"].cls is TPop and OPDEFS["pl.tfree"].spec is OPS["tfree"]
    # an annotation (set by a pass) is no DSL argument
    assert "ring" not in [p.name for p in OPS["aiv_initialize_pipe"].params]


def test_an_op_name_is_defined_once():
    with pytest.raises(ValueError, match="defined twice"):
        class _Again(OpClass):                       # noqa: F841
            __slots__ = ()
            name = "pl.tfree"
            x = operand()
            infer = staticmethod(lambda kind, a, at: None)
    assert OPDEFS["pl.tfree"].cls is TFree and type(Operation("pl.tfree")) is TFree


def test_a_declared_attribute_type_is_verified():
    prog = ('pl.program() {sym_name = "p"} ({\n'
            'pl.func() {sym_name = "k", kind = #kind.AIV} ({\n^bb0(%fifo: tensor<8192xu8>):\n'
            '  %c0 = pl.const() {value = 0} : () -> index\n'
            '  %buf = pl.reserve_buffer() {name = "ring", size = 4096, base = #pl.AUTO, '
            'memory_space = "UB"} : () -> buffer<reserve>\n'
            '  pl.aiv_initialize_pipe(%fifo, %c0, %c0) {dir_mask = #dir.DIR_C2V, slot_size = 2048, '
            'slot_num = none, lanes = none, flag_id = none, local_slot_num = none} : '
            '(tensor<8192xu8>, index, index) -> ()\n'
            '  %p = pl.tpop(%buf) {type = tile<16x32xf32,Vec>, split = SPLIT, '
            'direction = #dir.DIR_C2V} : (buffer<reserve>) -> tile<16x32xf32,Vec>\n'
            '}) : () -> ()\n}) : () -> ()\n')
    verify_ops(parse_ir(prog.replace("SPLIT", "#split.TILE_UP_DOWN")))
    with pytest.raises(CompileError, match="pl.tpop attribute 'split' is 'up'"):
        verify_ops(parse_ir(prog.replace("SPLIT", '"up"')))


def test_a_class_declares_its_fields_in_signature_order():
    names = [f.attr for f in TPop.fields]
    assert names == ["buf", "result_type", "split", "direction", "pipe_id", "tile"]
    assert TPop.result_type.key == "type" and isinstance(TPop.split, type(attribute("split")))


def test_the_fields_read_grouped_operands_and_an_attribute_dict_too():
    # what the interpreter's closures read: operands grouped per operand parameter (a list
    # for a variadic one), attributes a dict
    assert TPush.tile.of(["tile", "buf"]) == "tile" and TFree.obj.of(["buf", "obj"]) == "obj"
    assert StoreOp.tensor.of(["tile", ["r", "c"], "tensor"]) == "tensor"
    assert TFree.split.of({}) is None and TPush.split.of({}) is TileSplitAxis.TILE_NO_SPLIT
    assert TPop.result_type.of({"type": VEC}) == VEC
    with pytest.raises(KeyError):
        TPop.result_type.of({})
